// The failures gwctl reports, each with a stable code, a one-line message and a documented
// exit code (docs/gwctl.md, `gwctl --help`). Everything the CLI prints on failure is one
// `gwctl: <message>` line on stderr; the exit code tells scripts which kind of failure it was.

export const EXIT = {
  /** Success. */
  OK: 0,
  /** An unexpected failure (a bug): the message names it. */
  INTERNAL: 1,
  /** Bad flags or arguments. */
  USAGE: 2,
  /** No kubeconfig found, or the context it names does not exist. */
  KUBECONFIG: 3,
  /** The Kubernetes API server is unreachable or refused the request. */
  KUBE_API: 4,
  /** No Running and Ready pod matches the target. */
  NO_POD: 5,
  /** The port-forward to the pod could not be opened. */
  PORT_FORWARD: 6,
  /** The admin server is unreachable (connection refused or reset). */
  ADMIN_UNREACHABLE: 7,
  /** The admin server answered with an error (e.g. a refused log level) or with a malformed answer. */
  ADMIN_ERROR: 8,
  /** An input file (`--file`, a curl `@file`) is missing or malformed. */
  INPUT: 9,
  /** Inject mode: the request gwctl sent to the listener failed. */
  REQUEST_FAILED: 10,
  /** The admin server stalled: no connection, answer or stream byte within --timeout. */
  ADMIN_TIMEOUT: 11,
  /** Interrupted (Ctrl-C) before the trace finished. */
  INTERRUPTED: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export type ErrorCode =
  | 'TG_GWCTL_USAGE'
  | 'TG_GWCTL_KUBECONFIG'
  | 'TG_GWCTL_KUBE_API'
  | 'TG_GWCTL_NO_POD'
  | 'TG_GWCTL_PORT_FORWARD'
  | 'TG_GWCTL_ADMIN_UNREACHABLE'
  | 'TG_GWCTL_ADMIN_ERROR'
  | 'TG_GWCTL_INPUT'
  | 'TG_GWCTL_REQUEST_FAILED'
  | 'TG_GWCTL_ADMIN_TIMEOUT'
  | 'TG_GWCTL_INTERRUPTED';

const EXIT_OF: Record<ErrorCode, ExitCode> = {
  TG_GWCTL_USAGE: EXIT.USAGE,
  TG_GWCTL_KUBECONFIG: EXIT.KUBECONFIG,
  TG_GWCTL_KUBE_API: EXIT.KUBE_API,
  TG_GWCTL_NO_POD: EXIT.NO_POD,
  TG_GWCTL_PORT_FORWARD: EXIT.PORT_FORWARD,
  TG_GWCTL_ADMIN_UNREACHABLE: EXIT.ADMIN_UNREACHABLE,
  TG_GWCTL_ADMIN_ERROR: EXIT.ADMIN_ERROR,
  TG_GWCTL_INPUT: EXIT.INPUT,
  TG_GWCTL_REQUEST_FAILED: EXIT.REQUEST_FAILED,
  TG_GWCTL_ADMIN_TIMEOUT: EXIT.ADMIN_TIMEOUT,
  TG_GWCTL_INTERRUPTED: EXIT.INTERRUPTED,
};

export class GwctlError extends Error {
  readonly code: ErrorCode;
  readonly exitCode: ExitCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'GwctlError';
    this.code = code;
    this.exitCode = EXIT_OF[code];
  }
}

export const usage = (message: string) => new GwctlError('TG_GWCTL_USAGE', message);

/** The exit-code table as printed at the end of `gwctl --help`. */
export const EXIT_CODE_HELP = `Exit codes:
  0    success
  1    unexpected failure (a bug; please report it)
  2    bad flags or arguments
  3    no kubeconfig, or its context does not exist
  4    Kubernetes API server unreachable or request refused
  5    no Running and Ready pod matches the target
  6    port-forward to the pod failed
  7    admin server unreachable
  8    admin server answered with an error, or with a malformed answer
  9    input file missing or malformed (--file, curl @file)
  10   inject mode: the request to the listener failed
  11   admin server stalled (no connection, answer or stream byte within --timeout)
  130  interrupted (Ctrl-C)`;

/** Text of an unknown thrown value, without a stack. */
export function describe(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'object' && err !== null && 'message' in err) return String(err.message);
  return String(err);
}
