/**
 * The one error of the command line, with the exit code it implies, and the one way a command
 * reports whatever it failed with.
 */

/** A command's failure: exit 2 when the command line is wrong (the usage follows), else exit 1. */
export class CliError extends Error {
  /** 2: a mistake in the command line; 1: the command ran and failed. */
  readonly exitCode: 1 | 2;

  constructor(message: string, exitCode: 1 | 2 = 1, options?: ErrorOptions) {
    super(message, options);
    this.name = 'CliError';
    this.exitCode = exitCode;
  }

  /** A mistake in the command line: its message goes to stderr with the usage, exit 2. */
  static usage(message: string): CliError {
    return new CliError(message, 2);
  }
}

/**
 * Writes `err` to `stderr` for `gateway <command>` and returns the exit code: a usage mistake is
 * followed by `usage` (exit 2); any other failure is its message alone (exit 1), a file that could
 * not be read named with the system's code rather than the whole system message.
 */
export function reportFailure(
  err: unknown,
  stderr: (s: string) => void,
  command: string,
  usage: string,
): number {
  if (err instanceof CliError && err.exitCode === 2) {
    stderr(`gateway ${command}: ${err.message}\n${usage}\n`);
    return 2;
  }
  const code = (err as NodeJS.ErrnoException).code;
  const where = (err as { path?: string }).path;
  stderr(`gateway ${command}: ${code && where ? `${where}: ${code}` : (err as Error).message}\n`);
  return 1;
}
