/**
 * `gateway tokens create | rotate | list | revoke | import | reencrypt --config FILE` (contract §9):
 * manages the token store named by the gateway's own configuration. Exit 0, 1 (failed, with the
 * reason) or 2 (usage). Only `create` and `rotate` ever print a key.
 */
import { parseArgs } from 'node:util';
import type pg from 'pg';
import { canonicalTokenId } from '../signing/token-id.js';
import { GATEWAY_SCHEMA } from '../backends/postgres/schema.js';
import { checkSchema, migrate } from '../postgres/migrations.js';
import { ConfigError, loadConfigFile } from '../config/load.js';
import { type Config, PERMISSIONS } from '../config/schema.js';
import type { TokenStoreConfig } from '../config/token-store.js';
import { parseDuration } from '../config/units.js';
import {
  createToken,
  importTokens,
  type IssuedToken,
  listTokens,
  reencryptTokens,
  revokeToken,
  rotateToken,
} from '../tokens/admin.js';
import { Keyring } from '../tokens/seal.js';
import { CliError, reportFailure } from './error.js';
import { type CommandIo, withClient } from './postgres.js';
import { printIssued, printList } from './tokens-output.js';

const USAGE = `usage: gateway tokens COMMAND --config FILE [options]
  create --subject S --permissions P[,P...] [--name N] [--expires-in 90d] [--json]
                        a new token; prints its id and key (shown this once)
  rotate ID [--overlap 24h] [--json]
                        a new key for ID; the old one verifies for the overlap (0s: not at all)
  list [--json]         the store's tokens (never a key)
  revoke ID             refuses ID at once on every gateway; erases its key
  import [--force]      the configuration's auth.signature.tokens into the store (an id already
                        there is skipped unless --force)
  reencrypt             seals every key again under token_store.encryption_key
  FILE is the gateway's configuration: auth.signature.token_store names the database and keys.
  Durations: 30s, 10m, 24h, 90d. Exit 0, 1 (failed) or 2 (usage).`;

const OPTIONS = {
  config: { type: 'string' },
  json: { type: 'boolean' },
  subject: { type: 'string' },
  permissions: { type: 'string' },
  name: { type: 'string' },
  'expires-in': { type: 'string' },
  overlap: { type: 'string' },
  force: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Values = {
  config?: string;
  json?: boolean;
  subject?: string;
  permissions?: string;
  name?: string;
  'expires-in'?: string;
  overlap?: string;
  force?: boolean;
};

/** Which options (besides --config and --help) each command takes, and whether it takes an ID. */
const COMMANDS: Record<string, { options: Array<keyof Values>; id: boolean }> = {
  create: { options: ['subject', 'permissions', 'name', 'expires-in', 'json'], id: false },
  rotate: { options: ['overlap', 'json'], id: true },
  list: { options: ['json'], id: false },
  revoke: { options: [], id: true },
  import: { options: ['force'], id: false },
  reencrypt: { options: [], id: false },
};

const DEFAULT_OVERLAP = '24h';

/** Runs `gateway tokens` with `argv` (the arguments after `tokens`); resolves to the exit code. */
export async function runTokens(argv: string[], io: CommandIo): Promise<number> {
  const [command = '', ...rest] = argv;
  try {
    if (command === '--help' || command === '-h' || command === 'help') {
      io.stdout(`${USAGE}\n`);
      return 0;
    }
    const spec = COMMANDS[command];
    if (spec === undefined)
      throw CliError.usage(command ? `unknown command "${command}"` : 'a command is required');
    let values: Values & { help?: boolean };
    let positionals: string[];
    try {
      ({ values, positionals } = parseArgs({
        args: rest,
        options: OPTIONS,
        allowPositionals: true,
        strict: true,
      }));
    } catch (err) {
      throw CliError.usage((err as Error).message);
    }
    if (values.help) {
      io.stdout(`${USAGE}\n`);
      return 0;
    }
    for (const name of Object.keys(values)) {
      if (name !== 'config' && name !== 'help' && !spec.options.includes(name as keyof Values)) {
        throw CliError.usage(`--${name} is not an option of "tokens ${command}"`);
      }
    }
    if (positionals.length !== (spec.id ? 1 : 0)) {
      throw CliError.usage(
        spec.id ? `"tokens ${command}" takes one token ID` : `unexpected argument "${positionals[0]}"`,
      );
    }
    const id = spec.id ? tokenId(positionals[0] as string) : '';
    if (values.config === undefined) throw CliError.usage('--config FILE is required');
    const run = prepare(command, values, id);
    const config = load(values.config);
    const store = config.auth.signature.token_store;
    if (store === undefined) {
      throw new CliError(`${values.config} configures no auth.signature.token_store`);
    }
    const keyring = new Keyring(store.encryption_key, store.previous_encryption_keys);
    await withClient(store.url, async (client) => {
      await schema(client, store);
      await run(client, keyring, config, io);
    });
    return 0;
  } catch (err) {
    const usage = err instanceof CliError && err.exitCode === 2;
    return reportFailure(err, io.stderr, usage || !command ? 'tokens' : `tokens ${command}`, USAGE);
  }
}

type Run = (client: pg.Client, keyring: Keyring, config: Config, io: CommandIo) => Promise<void>;

/** Checks a command's options (exit 2 on a mistake) and returns what it will do once connected. */
function prepare(command: string, values: Values, id: string): Run {
  const json = values.json === true;
  switch (command) {
    case 'create': {
      const subject = values.subject?.trim();
      if (!subject) throw CliError.usage('--subject S is required');
      if (values.permissions === undefined) throw CliError.usage('--permissions P[,P...] is required');
      const permissions = permissionList(values.permissions);
      const name = values.name === undefined ? null : values.name;
      const expiresIn =
        values['expires-in'] === undefined ? null : duration(values['expires-in'], '--expires-in', 1);
      return async (client, keyring, _config, io) => {
        const expiresAt = expiresIn === null ? null : Date.now() + expiresIn;
        printIssued(io, await createToken(client, keyring, { subject, permissions, name, expiresAt }), json);
      };
    }
    case 'rotate': {
      const overlap = duration(values.overlap ?? DEFAULT_OVERLAP, '--overlap', 0);
      return async (client, keyring, _config, io) => {
        const issued = await rotateToken(client, keyring, id, overlap);
        const { previous_key_until: until, ...shown } = issued;
        printIssued(io, shown as IssuedToken, json);
        io.stderr(
          until ? `the previous key verifies until ${until}\n` : 'the previous key no longer verifies\n',
        );
      };
    }
    case 'list':
      return async (client, _keyring, _config, io) => printList(io, await listTokens(client), json);
    case 'revoke':
      return async (client, _keyring, _config, io) => {
        const { revokedAt, now } = await revokeToken(client, id);
        io.stdout(now ? `revoked ${id}\n` : `${id} was already revoked at ${revokedAt}\n`);
      };
    case 'import':
      return async (client, keyring, config, io) => {
        const tokens = config.auth.signature.tokens.map((t) => ({
          id: t.id.toLowerCase(),
          key: t.key,
          subject: t.subject,
          permissions: [...t.permissions],
          name: null,
          expiresAt: null,
        }));
        const results = await importTokens(client, keyring, tokens, values.force === true);
        for (const r of results) {
          const note = r.result === 'skipped' ? ' (already in the store; --force replaces it)' : '';
          io.stdout(`${r.result} ${r.id}${note}\n`);
        }
        const count = (what: string) => results.filter((r) => r.result === what).length;
        io.stdout(
          `${count('imported')} imported, ${count('replaced')} replaced, ${count('skipped')} skipped\n`,
        );
      };
    default:
      return async (client, keyring, _config, io) => {
        const r = await reencryptTokens(client, keyring);
        io.stdout(`${r.reencrypted} reencrypted, ${r.current} already under the current key\n`);
        if (r.failed.length > 0) {
          throw new CliError(`these tokens do not decrypt and were left as they are: ${r.failed.join(', ')}`);
        }
      };
  }
}

function tokenId(value: string): string {
  const id = canonicalTokenId(value);
  if (id === undefined) throw CliError.usage(`token ID must be a UUID`);
  return id;
}

function permissionList(value: string): string[] {
  const list = [
    ...new Set(
      value
        .split(',')
        .map((p) => p.trim())
        .filter((p) => p !== ''),
    ),
  ];
  const known = PERMISSIONS as readonly string[];
  const unknown = list.filter((p) => !known.includes(p));
  if (unknown.length > 0) {
    throw CliError.usage(`unknown permission ${unknown.join(', ')} (known: ${PERMISSIONS.join(', ')})`);
  }
  return list;
}

/** A duration option in ms, at least `min`: `30s`, `10m`, `24h`, or (here only) days, `90d`. */
function duration(value: string, option: string, min: number): number {
  const days = /^(\d+(?:\.\d+)?)\s*d$/.exec(value.trim());
  const ms = days ? Math.round(Number(days[1]) * 86_400_000) : parseDuration(value);
  if (ms === undefined || ms < min) {
    throw CliError.usage(`${option} must be a duration such as 30s, 10m, 24h or 90d`);
  }
  return ms;
}

function load(file: string): Config {
  try {
    return loadConfigFile(file);
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(`${file}: ${err.message}`);
    throw err;
  }
}

/** The token table in place: migrated as the gateway would (`migrate: true`), else checked. */
async function schema(client: pg.Client, store: TokenStoreConfig): Promise<void> {
  if (store.migrate) await migrate(client, GATEWAY_SCHEMA);
  else await checkSchema(client, GATEWAY_SCHEMA);
}
