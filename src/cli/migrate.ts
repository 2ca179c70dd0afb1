/**
 * `gateway migrate --postgres URL`: brings a database's schema to this gateway's version, ahead of
 * a deployment that runs with `migrate: false`. Safe to run while gateways serve, and to run twice.
 */
import { GATEWAY_SCHEMA } from '../backends/postgres/schema.js';
import { migrate } from '../postgres/migrations.js';
import { type CommandIo, postgresUrl, runCommand, withClient } from './postgres.js';

const USAGE = `usage: gateway migrate --postgres URL
  Applies the gateway's schema migrations the database lacks (under an advisory lock, in one
  transaction). The URL may instead be given in GATEWAY_POSTGRES_URL.`;

/** Runs `gateway migrate` with `argv` (the arguments after `migrate`); resolves to the exit code. */
export function runMigrate(argv: string[], io: CommandIo): Promise<number> {
  const options = { postgres: { type: 'string' }, help: { type: 'boolean', short: 'h' } } as const;
  return runCommand<{ postgres?: string }>('migrate', USAGE, io, { argv, options }, async (values) => {
    const url = postgresUrl(values.postgres, io.env);
    const applied = await withClient(url, (client) => migrate(client, GATEWAY_SCHEMA));
    io.stdout(
      applied.length === 0
        ? `schema is up to date (version ${GATEWAY_SCHEMA.latest})\n`
        : `applied migrations ${applied.join(', ')}; schema is at version ${GATEWAY_SCHEMA.latest}\n`,
    );
  });
}
