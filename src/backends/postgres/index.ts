/**
 * The PostgreSQL connection shared by the postgres backends of one configuration: one pool per URL,
 * the schema migrated (or checked), and the database's health.
 *
 * The gateway starts even when the database is down: it is then not ready (`/readyz` 503), requests
 * get 503 `store unavailable`, and a background check retries until the database answers (and the
 * schema is in place), when readiness comes back by itself. Requests also try the database directly
 * whenever the schema is ready, so a recovered database serves at once.
 *
 * Whatever keeps a request or the check from obtaining a connection (refused, unreachable, TLS,
 * login, too many connections, not accepting connections, shutting down) makes the database away
 * until a connection succeeds again; a busy pool does not. A connection lost under a statement
 * costs its request a 503 and starts a check at once, which decides whether the database is away.
 */
import type { BackendCall } from '../backend-call.js';
import type { SpanAttributes, Tracing } from '../../observability/tracing/tracing.js';
import type pg from 'pg';
import type { QueryResultRow } from 'pg';
import { errors } from '../../errors.js';
import type { Logger } from '../../observability/logger.js';
import type { Metrics } from '../../observability/metrics.js';
import type { PostgresConfig } from './config.js';
import { isConnectionLost, isPoolBusy } from '../../postgres/errors.js';
import { clientSettings, poolSettings } from '../../postgres/connection.js';
import { pgDriver } from '../../postgres/driver.js';
import { checkSchema, migrate } from '../../postgres/migrations.js';
import { GATEWAY_SCHEMA } from './schema.js';
import { createSession, type Query } from './session.js';

export type { Query } from './session.js';

/** An open database pool: statements and transactions under a signal, its readiness, and its metrics. */
export interface PostgresPool {
  /** True while the database answers and its schema is in place. */
  ready(): boolean;
  /** One statement; 503 while the schema is not ready or the database is unreachable. */
  query<R extends QueryResultRow = QueryResultRow>(
    text: string,
    values: unknown[],
    signal: AbortSignal,
  ): Promise<R[]>;
  /** `work` in one transaction whose `COMMIT` is the one commit point (see `session.ts`). */
  transaction<T>(signal: AbortSignal, work: (query: Query) => Promise<T>): Promise<T>;
  /**
   * Runs the store operation `operation` (`asset_group_tags.get_member`, …) for `call`: its duration
   * goes to `gateway_store_operation_duration_seconds` and the request line's `upstream_ms`, and,
   * with tracing on, it is a client span of the request.
   */
  timed<T>(operation: string, call: Pick<BackendCall, 'spent' | 'span'>, work: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * The SQL expression that writes the timestamptz `column` as the API's wire timestamps: RFC 3339 in
 * UTC, fraction digits only where they are not zero.
 */
export const sqlTimestamp = (column: string) =>
  `regexp_replace(to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), '\\.?0+Z$', 'Z')`;

/** Opens the pool for `config`; migrates (or checks) the schema unless the database is down. */
export async function openPostgres(
  config: PostgresConfig,
  deps: { readonly logger: Logger; readonly metrics: Metrics; readonly tracing?: Tracing },
): Promise<PostgresPool> {
  const { tracing } = deps;
  const spanAttributes = tracing && databaseAttributes(config.url);
  const log = deps.logger.child({ component: 'postgres' });
  const connection = { url: config.url, connectTimeout: config.connect_timeout };
  const pool = new (pgDriver().Pool)({
    ...poolSettings(connection),
    max: config.pool_size,
    statement_timeout: config.statement_timeout,
    // A transaction left open (a stalled process) must not hold its row locks for ever.
    idle_in_transaction_session_timeout: Math.max(config.statement_timeout, 10_000),
  });
  // A connection that dies (the server restarts, the network drops) must not crash the process.
  const onClientError = (err: Error) => {
    log.warn({ err: err.message }, 'database connection lost');
    void check(true);
  };
  pool.on('connect', (client) => client.on('error', onClientError));
  pool.on('error', onClientError);

  let schemaReady = false;
  let reachable = false;
  let lastOk = 0;
  let lastProblem: string | undefined;
  let closed = false;
  const cancels = new Set<Promise<void>>();

  const up = () => {
    lastOk = Date.now();
    if (!reachable && schemaReady) log.info('database reachable');
    reachable = true;
    lastProblem = undefined;
  };
  const down = (err: unknown) => {
    const problem = (err as Error).message;
    if (reachable || problem !== lastProblem) log.error({ err: problem }, 'database unavailable');
    reachable = false;
    lastProblem = problem;
  };

  const session = createSession(pool, {
    succeeded: up,
    unreachable: down,
    // A connection lost under a statement says nothing yet of the others: a probe decides at once.
    lost: () => void check(true),
    cancel(pid) {
      const client = new (pgDriver().Client)({
        ...clientSettings({ ...connection, role: 'cancel' }),
        statement_timeout: config.connect_timeout,
      });
      client.on('error', () => undefined);
      const done = client
        .connect()
        .then(() => client.query('SELECT pg_cancel_backend($1)', [pid]))
        .then(
          () => undefined,
          (err: Error) => log.warn({ err: err.message }, 'cancelling a statement failed'),
        )
        .finally(() => client.end().catch(() => undefined));
      cancels.add(done);
      void done.then(() => cancels.delete(done));
    },
  });

  /**
   * Proves that a connection can be obtained and answers: up if so, down if none can be obtained
   * (a busy pool changes nothing). A pooled connection found dead is replaced once.
   */
  const ping = async () => {
    for (let tries = 2; tries > 0; tries--) {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (err) {
        if (!isPoolBusy(err)) down(err);
        return;
      }
      try {
        await client.query('SELECT 1');
        client.release();
        up();
        return;
      } catch (err) {
        const lost = isConnectionLost(err);
        client.release(lost);
        if (!lost) return;
        if (tries === 1) down(err);
      }
    }
  };

  /** Brings the schema in place, then (or, with `force`, at once) proves the database answers. */
  const probe = async (force: boolean) => {
    try {
      if (!schemaReady) {
        const client = await pool.connect();
        let failed: Error | undefined;
        try {
          if (config.migrate) {
            const applied = await migrate(client, GATEWAY_SCHEMA);
            if (applied.length > 0) log.info({ versions: applied }, 'database migrated');
          } else {
            await checkSchema(client, GATEWAY_SCHEMA);
          }
        } catch (err) {
          failed = err as Error;
          throw err;
        } finally {
          client.release(failed);
        }
        schemaReady = true;
        up();
      } else if (force || !reachable || Date.now() - lastOk >= config.health_check_interval) {
        await ping();
      }
    } catch (err) {
      // Not reachable, or reachable with a schema that is not in place: not ready either way.
      down(err);
    }
  };
  /** One probe at a time. */
  let checking: Promise<void> | undefined;
  const check = (force = false): Promise<void> => {
    if (closed) return Promise.resolve();
    checking ??= probe(force).finally(() => {
      checking = undefined;
    });
    return checking;
  };

  await check();
  const timer = setInterval(() => void check(), config.health_check_interval);
  timer.unref();
  const counts = () => ({
    idle: pool.idleCount,
    active: pool.totalCount - pool.idleCount,
    waiting: pool.waitingCount,
  });
  deps.metrics.storePools.add(counts);

  const usable = () => {
    if (closed || !schemaReady) throw errors.storeUnavailable();
  };
  return {
    ready: () => !closed && schemaReady && reachable,
    async query(text, values, signal) {
      usable();
      return session.query(text, values, signal);
    },
    async transaction(signal, work) {
      usable();
      return session.transaction(signal, work);
    },
    timed(operation, call, work) {
      const started = performance.now();
      const done = () => {
        const ms = performance.now() - started;
        deps.metrics.storeDuration.observe({ backend: 'postgres', operation }, ms / 1000);
        call.spent?.(ms);
      };
      const running =
        tracing === undefined
          ? work()
          : tracing.span(
              operation,
              'client',
              { ...spanAttributes, 'db.operation.name': operation },
              call.span,
              work,
            );
      return running.finally(done);
    },
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      deps.metrics.storePools.delete(counts);
      await checking;
      await Promise.allSettled([...cancels]);
      await pool.end();
    },
  };
}

/** The database's span attributes (semantic conventions): system, server and database name, never the credentials. */
function databaseAttributes(url: string): SpanAttributes {
  try {
    const u = new URL(url);
    return {
      'db.system.name': 'postgresql',
      'server.address': u.hostname || undefined,
      'server.port': Number(u.port) || 5432,
      'db.namespace': decodeURIComponent(u.pathname.slice(1)) || undefined,
    };
  } catch {
    return { 'db.system.name': 'postgresql' };
  }
}
