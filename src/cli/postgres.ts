/**
 * What `gateway migrate` and `gateway import` share: where they write, which database they open, and
 * how a failure is reported. The URL may carry a password, so it can come from the environment
 * (`GATEWAY_POSTGRES_URL`) rather than the command line, and it never appears in a message.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import pg from 'pg';
import { clientSettings } from '../postgres/connection.js';
import { CliError, reportFailure } from './error.js';

/** Where a command writes, and the environment it reads `GATEWAY_POSTGRES_URL` from. */
export interface CommandIo {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
  env: Record<string, string | undefined>;
}

const URL_FORM = /^postgres(ql)?:\/\//;

/** The database URL from `--postgres`, else `GATEWAY_POSTGRES_URL`. */
export function postgresUrl(flag: string | undefined, env: CommandIo['env']): string {
  const url = flag ?? env.GATEWAY_POSTGRES_URL;
  if (url === undefined || url === '') {
    throw CliError.usage('--postgres URL (or GATEWAY_POSTGRES_URL) is required');
  }
  if (!URL_FORM.test(url)) throw CliError.usage('--postgres must be a postgres:// URL');
  return url;
}

/** Runs `work` on one connection to `url` (no statement timeout: an operator waits for it), then closes it. */
export async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client(clientSettings({ url, connectTimeout: 10_000, role: 'cli' }));
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Runs a command on its parsed options (`--help` prints `usage`): a malformed command line or a
 * usage `CliError` is exit 2 with `usage`, any other failure exit 1 with its message.
 */
export async function runCommand<T>(
  name: string,
  usage: string,
  io: CommandIo,
  parse: { argv: string[]; options: NonNullable<ParseArgsConfig['options']> },
  command: (values: T) => Promise<void>,
): Promise<number> {
  try {
    let values: T & { help?: boolean };
    try {
      const parsed = parseArgs({
        args: parse.argv,
        options: parse.options,
        strict: true,
        allowPositionals: false,
      });
      // The options given describe exactly the fields of T.
      values = parsed.values as unknown as T & { help?: boolean };
    } catch (err) {
      throw CliError.usage((err as Error).message);
    }
    if (values.help) {
      io.stdout(`${usage}\n`);
      return 0;
    }
    await command(values);
    return 0;
  } catch (err) {
    return reportFailure(err, io.stderr, name, usage);
  }
}
