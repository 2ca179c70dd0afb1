/**
 * `gateway audit verify | list --config FILE` (contract §12): reads the audit trail the gateway's
 * configuration names, without taking the writer's lock (a gateway may be appending). Exit 0, 1
 * (a broken chain, an unexpected head, or a failure, with the reason) or 2 (usage).
 */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { AuditEntry } from '../audit/entry.js';
import { readFileTrail } from '../audit/file-read.js';
import { walkRows } from '../audit/postgres.js';
import type { EntryRow } from '../audit/sql-query.js';
import type { AuditTarget } from '../audit/store-for.js';
import type { TrailItem } from '../audit/store.js';
import { parseTime } from '../audit/time.js';
import { parseExpectedHead, type VerifyReport, verifyTrail } from '../audit/verify.js';
import { ConfigError } from '../config/load.js';
import { auditTargetOf } from './audit-config.js';
import { CliError } from './error.js';
import { type CommandIo, withClient } from './postgres.js';

const USAGE = `usage: gateway audit COMMAND --config FILE [options]
  verify [--expect-head ID:HASH]   check the hash chain; list intents without an outcome
  list [--since RFC3339] [--json]  print entries (--json: one JSON entry a line, as stored)
  FILE is the gateway's configuration: audit.store, or backends.sso_providers, names the trail.
  Exit 0, 1 (broken or failed) or 2 (usage).`;

const OPTIONS = {
  config: { type: 'string' },
  'expect-head': { type: 'string' },
  since: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

const ALLOWED: Record<string, readonly string[]> = {
  verify: ['expect-head'],
  list: ['since', 'json'],
};

type Values = { config?: string; 'expect-head'?: string; since?: string; json?: boolean; help?: boolean };

/** Runs `gateway audit` with `argv` (the arguments after `audit`); resolves to the exit code. */
export async function runAudit(argv: string[], io: CommandIo): Promise<number> {
  const [command = '', ...rest] = argv;
  try {
    if (command === '--help' || command === '-h' || command === 'help') {
      io.stdout(`${USAGE}\n`);
      return 0;
    }
    const allowed = ALLOWED[command];
    if (allowed === undefined)
      throw CliError.usage(command ? `unknown command "${command}"` : 'a command is required');
    let values: Values;
    try {
      ({ values } = parseArgs({ args: rest, options: OPTIONS, strict: true, allowPositionals: false }));
    } catch (err) {
      throw CliError.usage((err as Error).message);
    }
    if (values.help) {
      io.stdout(`${USAGE}\n`);
      return 0;
    }
    for (const name of Object.keys(values)) {
      if (name !== 'config' && !allowed.includes(name))
        throw CliError.usage(`--${name} is not an option of "audit ${command}"`);
    }
    if (values.config === undefined) throw CliError.usage('--config FILE is required');
    const expect = values['expect-head'] === undefined ? undefined : parseExpectedHead(values['expect-head']);
    if (values['expect-head'] !== undefined && expect === undefined)
      throw CliError.usage('--expect-head must be ID:HASH');
    const since = values.since === undefined ? undefined : parseTime(values.since);
    if (values.since !== undefined && since === undefined)
      throw CliError.usage('--since must be an RFC 3339 time');

    const target = auditTargetOf(values.config, io.env);
    if (target === undefined)
      throw new Error(
        `${values.config} configures no audit trail (an upstream sso_providers backend and no audit.store)`,
      );
    const where = target.type === 'file' ? target.path : 'audit_logs (PostgreSQL)';
    if (command === 'verify') {
      const report = await readTrail(target, (items) => verifyTrail(items, expect));
      return printReport(io, where, report);
    }
    await readTrail(target, async (items) => {
      for await (const item of items) printListed(io, item, since, values.json === true);
    });
    return 0;
  } catch (err) {
    if (err instanceof CliError && err.exitCode === 2) {
      io.stderr(`gateway audit: ${err.message}\n${USAGE}\n`);
      return 2;
    }
    const message = err instanceof ConfigError ? `${err.message}` : (err as Error).message;
    io.stderr(`gateway audit${command ? ` ${command}` : ''}: ${message}\n`);
    return 1;
  }
}

/** Runs `work` over the entries of `target`, read-only. */
async function readTrail<T>(
  target: AuditTarget,
  work: (items: AsyncIterable<TrailItem>) => Promise<T>,
): Promise<T> {
  if (target.type === 'file') {
    if (!existsSync(target.path)) throw new Error(`audit trail ${target.path} does not exist`);
    return work(readFileTrail(target.path));
  }
  return withClient(target.url, async (client) => {
    const { rows } = await client.query<{ exists: boolean }>(
      "SELECT to_regclass('audit_logs') IS NOT NULL AS exists",
    );
    if (rows[0]?.exists !== true) throw new Error('the database has no audit trail (no audit_logs table)');
    return work(walkRows(async (text, values) => (await client.query<EntryRow>(text, values)).rows));
  });
}

function printReport(io: CommandIo, where: string, report: VerifyReport): number {
  const head = report.head ? `${report.head.id}:${report.head.hash}` : 'none (empty)';
  if (report.broken) {
    const line = `the chain breaks at ${report.broken.at}: ${report.broken.reason}`;
    io.stdout(`audit trail ${where}: ${line} (${report.entries} entries before it hold)\n`);
    io.stderr(`gateway audit verify: ${line}\n`);
  } else {
    io.stdout(`audit trail ${where}: ${report.entries} entries, the chain holds; head ${head}\n`);
  }
  if (report.incompleteTail) {
    io.stdout(
      `${report.incompleteTail}: incomplete (being written, or cut by a crash; moved aside at the next start)\n`,
    );
  }
  if (report.pending.length > 0) {
    io.stdout(`intents without outcome (${report.pending.length}):\n`);
    for (const p of report.pending) io.stdout(`  ${p.commit_id}  id ${p.id}  ${p.created_at}\n`);
  }
  return report.ok ? 0 : 1;
}

function printListed(io: CommandIo, item: TrailItem, since: number | undefined, json: boolean): void {
  if (item.entry === undefined) {
    io.stderr(`${item.at}: ${item.problem ?? 'not an entry'} (gateway audit verify tells more)\n`);
    return;
  }
  const entry = item.entry as AuditEntry;
  if (since !== undefined && !(Date.parse(entry.created_at) * 1000 >= since)) return;
  if (json) {
    io.stdout(`${JSON.stringify(entry)}\n`);
    return;
  }
  const actor = entry.actor_email ? `${entry.actor_name} <${entry.actor_email}>` : entry.actor_name;
  io.stdout(
    `${entry.id}\t${entry.created_at}\t${entry.action}\t${entry.status}\t${actor}\t${entry.commit_id}\t${JSON.stringify(entry.fields)}\n`,
  );
}
