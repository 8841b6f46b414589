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
  /** The target's Gateway does not exist in the namespace (or the cluster serves no Gateway API). */
  NO_GATEWAY: 12,
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
  | 'TG_GWCTL_NO_GATEWAY'
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
  TG_GWCTL_NO_GATEWAY: EXIT.NO_GATEWAY,
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

/**
 * What each exit code means, in one line: printed at the end of `gwctl --help` and listed in
 * docs/gwctl.md ("Errors and exit codes"), which a test keeps equal to this table.
 */
export const EXIT_MEANINGS: Record<ExitCode, string> = {
  [EXIT.OK]: 'success',
  [EXIT.INTERNAL]: 'unexpected failure (a bug; please report it; GWCTL_DEBUG=1 adds the stack)',
  [EXIT.USAGE]: 'bad flags or arguments',
  [EXIT.KUBECONFIG]: 'no kubeconfig, or its context does not exist',
  [EXIT.KUBE_API]: 'Kubernetes API server unreachable or request refused',
  [EXIT.NO_POD]: 'no Running and Ready pod matches the target',
  [EXIT.PORT_FORWARD]: 'port-forward to the pod failed',
  [EXIT.ADMIN_UNREACHABLE]: 'admin server unreachable (connection refused or reset)',
  [EXIT.ADMIN_ERROR]: 'admin server answered with an error, or with a malformed answer',
  [EXIT.INPUT]: 'input file missing or malformed (--file, curl @file)',
  [EXIT.REQUEST_FAILED]: 'inject mode: the request to the listener failed',
  [EXIT.ADMIN_TIMEOUT]: 'admin server stalled (no connection, answer or stream byte within --timeout)',
  [EXIT.NO_GATEWAY]: 'the Gateway of the target does not exist in the namespace',
  [EXIT.INTERRUPTED]: 'interrupted (Ctrl-C)',
};

/** The exit-code table as printed at the end of `gwctl --help`. */
export const EXIT_CODE_HELP = `Exit codes:\n${Object.entries(EXIT_MEANINGS)
  .map(([code, meaning]) => `  ${code.padEnd(5)}${meaning}`)
  .join('\n')}`;

/** Text of an unknown thrown value, without a stack. */
export function describe(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'object' && err !== null && 'message' in err) return String(err.message);
  return String(err);
}
