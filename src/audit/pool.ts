/**
 * A database of the audit trail's own, for a trail that does not share the providers' database
 * pool: a node-postgres pool with bounded waits, the gateway's schema (which holds `audit_logs`)
 * migrated (or checked) when opened, by the runner every database of the gateway is migrated with.
 */
import { pgDriver } from '../postgres/driver.js';
import { checkSchema, migrate, type Schema } from '../postgres/migrations.js';
import type { AuditDatabase, AuditSql } from './store.js';

/** The pool's settings. */
export interface AuditPoolOptions {
  readonly url: string;
  readonly pool_size?: number;
  readonly connect_timeout?: number;
  readonly statement_timeout?: number;
  /** Apply missing migrations (default), or only check that none is missing. */
  readonly migrate?: boolean;
  /** The gateway's schema (handed down: it is put together above this layer). */
  readonly schema: Schema;
}

/** An open pool: an `AuditDatabase` that must be closed. */
export interface AuditPool extends AuditDatabase {
  /** `work` in one READ COMMITTED transaction that commits when it resolves (a change beside the trail). */
  transaction<T>(signal: AbortSignal, work: (query: AuditSql) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** Opens a pool on `options.url` and brings the audit schema in place; rejects when it cannot. */
export async function openAuditPool(
  options: AuditPoolOptions,
  onError: (err: Error) => void = () => undefined,
): Promise<AuditPool> {
  const pool = new (pgDriver().Pool)({
    connectionString: options.url,
    max: options.pool_size ?? 4,
    connectionTimeoutMillis: options.connect_timeout ?? 5_000,
    statement_timeout: options.statement_timeout ?? 10_000,
    idle_in_transaction_session_timeout: Math.max(options.statement_timeout ?? 10_000, 10_000),
    application_name: 'bh-gateway audit',
  });
  // A connection that dies must not crash the process: the next statement fails and says so.
  pool.on('error', onError);
  pool.on('connect', (client) => client.on('error', onError));
  let reachable = true;
  const track = <T>(running: Promise<T>): Promise<T> =>
    running.then(
      (value) => {
        reachable = true;
        return value;
      },
      (err: unknown) => {
        reachable = false;
        throw err;
      },
    );
  try {
    const client = await pool.connect();
    try {
      if (options.migrate === false) await checkSchema(client, options.schema);
      else await migrate(client, options.schema);
    } finally {
      client.release();
    }
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw err;
  }
  return {
    query: (text, values, signal) => {
      signal.throwIfAborted();
      return track(pool.query(text, values).then((r) => r.rows));
    },
    async transaction(signal, work) {
      signal.throwIfAborted();
      const client = await track(pool.connect());
      let failed = false;
      try {
        await client.query('BEGIN');
        const result = await work(async (text, values) => (await client.query(text, values)).rows);
        await client.query('COMMIT');
        reachable = true;
        return result;
      } catch (err) {
        failed = true;
        await client.query('ROLLBACK').catch(() => undefined);
        reachable = false;
        throw err;
      } finally {
        // A connection that failed mid-transaction is not trusted again.
        client.release(failed);
      }
    },
    ready: () => reachable,
    close: () => pool.end(),
  };
}
