/**
 * `gateway import --postgres URL [--sso-providers FILE] [--asset-group-tags FILE]`: loads the local
 * stores' JSON files into the database that `type: postgres` backends read, so an operator can move
 * from one process to several. The schema is migrated first; both files go in one transaction;
 * the tables are made to hold exactly what the files hold, and a second run changes nothing.
 */
import { readFile } from 'node:fs/promises';
import type { z } from 'zod';
import { assetGroupTagsFileSchema } from '../backends/asset-group-tags/local.js';
import {
  type ImportError,
  type ImportReport,
  setAnyRole,
  ssoRows,
  syncTables,
  tagRows,
} from '../backends/postgres/import.js';
import { GATEWAY_SCHEMA } from '../backends/postgres/schema.js';
import { migrate } from '../postgres/migrations.js';
import { ssoProvidersFileSchema } from '../backends/sso-providers/local.js';
import { inTransaction } from '../postgres/transaction.js';
import { CliError } from './error.js';
import { type CommandIo, postgresUrl, runCommand, withClient } from './postgres.js';

const USAGE = `usage: gateway import --postgres URL [--sso-providers FILE] [--asset-group-tags FILE]
  Loads the local JSON stores into the database (at least one file). Each store's tables are made
  to hold exactly what its file holds; running it again changes nothing. The URL may instead be
  given in GATEWAY_POSTGRES_URL.`;

const OPTIONS = {
  postgres: { type: 'string' },
  'sso-providers': { type: 'string' },
  'asset-group-tags': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Runs `gateway import` with `argv` (the arguments after `import`); resolves to the exit code. */
export function runImport(argv: string[], io: CommandIo): Promise<number> {
  type Values = { postgres?: string; 'sso-providers'?: string; 'asset-group-tags'?: string };
  return runCommand<Values>('import', USAGE, io, { argv, options: OPTIONS }, async (values) => {
    const url = postgresUrl(values.postgres, io.env);
    const ssoFile = values['sso-providers'];
    const tagsFile = values['asset-group-tags'];
    if (ssoFile === undefined && tagsFile === undefined) {
      throw CliError.usage('give --sso-providers FILE, --asset-group-tags FILE or both');
    }
    // Every file is read and checked before the database is touched.
    const sso = ssoFile === undefined ? undefined : await load(ssoFile, ssoProvidersFileSchema);
    const tags = tagsFile === undefined ? undefined : await load(tagsFile, assetGroupTagsFileSchema);
    const ssoTables = sso && named(ssoFile as string, () => ssoRows(sso));
    const tagTables = tags && named(tagsFile as string, () => tagRows(tags));

    const report = await withClient(url, async (client) => {
      await migrate(client, GATEWAY_SCHEMA);
      const result = await inTransaction(client, async () => {
        const out: ImportReport = {};
        if (ssoTables) {
          Object.assign(out, await syncTables(client, ssoTables));
          out.gateway_settings = await setAnyRole(client, (sso as { roles?: unknown }).roles === undefined);
        }
        if (tagTables) Object.assign(out, await syncTables(client, tagTables));
        return out;
      });
      // Fresh statistics, so the planner picks the indexes at once rather than after autovacuum.
      for (const table of Object.keys(result)) await client.query(`ANALYZE ${table}`);
      return result;
    });
    for (const [table, c] of Object.entries(report)) {
      io.stdout(`${table}: ${c.inserted} inserted, ${c.updated} updated, ${c.deleted} deleted\n`);
    }
  });
}

/** `file` parsed with `schema`, or an error naming the file and its first faulty key. */
async function load<S extends z.ZodType>(file: string, schema: S): Promise<z.output<S>> {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    throw new Error(`${file}: ${(err as Error).message}`, { cause: err });
  }
  const result = schema.safeParse(json);
  if (result.success) return result.data;
  const [issue] = result.error.issues;
  const where = issue?.path.length ? issue.path.join('.') : '(top level)';
  throw new Error(`${file} is invalid at ${where}: ${issue?.message}`);
}

/** `make()`, with `file` named in the message of the `ImportError` it throws. */
function named<T>(file: string, make: () => T): T {
  try {
    return make();
  } catch (err) {
    throw new Error(`${file}: ${(err as ImportError).message}`, { cause: err });
  }
}
