// The exit codes of `tollgate`, one meaning each: printed by `tollgate --help` and listed in
// docs/tollgate.md ("Exit codes"), which a test keeps equal to this table.

export const EXIT = {
  /** A clean stop (a signal or POST /quitquitquit, after the drain), or --check found the file valid. */
  OK: 0,
  /** The process failed while running or starting: a port in use, a second signal, a bug. */
  RUNTIME: 1,
  /** The command line or the config file is wrong: nothing was started. */
  USAGE: 2,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export const EXIT_MEANINGS: Record<ExitCode, string> = {
  [EXIT.OK]: 'clean stop (SIGTERM, SIGINT or POST /quitquitquit, after the drain), or --check found the file valid',
  [EXIT.RUNTIME]: 'runtime failure: a port in use (TG_BIND_IN_USE), a Node.js older than 26, a second SIGTERM/SIGINT during the drain, an unexpected error',
  [EXIT.USAGE]: 'usage or configuration error: a bad flag, a config file that cannot be read, parsed or validated',
};

export const EXIT_CODE_HELP = `Exit codes:\n${Object.entries(EXIT_MEANINGS)
  .map(([code, meaning]) => `  ${code}  ${meaning}`)
  .join('\n')}\n`;
