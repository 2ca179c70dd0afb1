/**
 * Statements and transactions on a pool, under the request's `AbortSignal`. pg takes no signal, so
 * an abort is made real here: a wait for a connection is given up, and a running statement is
 * cancelled on the server (`pg_cancel_backend` from a separate connection); the connection it ran on
 * is then discarded rather than returned to the pool, so no late cancel can hit another request.
 * A connection that cannot be obtained and one lost while held are told to the hooks apart.
 */
import type { Pool, PoolClient, QueryResultRow } from 'pg';
import { isConnectionLost, isPoolBusy, translate, translateConnectFailure } from '../../postgres/errors.js';

/** Runs one statement of a transaction. */
export type Query = <R extends QueryResultRow = QueryResultRow>(
  text: string,
  values?: unknown[],
) => Promise<R[]>;

export interface SessionHooks {
  /** Stops the statement running on the server process `pid` (fire and forget). */
  cancel(pid: number): void;
  /** A statement succeeded: the database is reachable. */
  succeeded(): void;
  /** No connection could be obtained (other than from a busy pool): the database is away. */
  unreachable(err: unknown): void;
  /** A connection was lost under a statement: whether the database is away is still to be found. */
  lost(err: unknown): void;
}

/** A pooled connection, given up (and released) if `signal` aborts first. */
async function acquire(pool: Pool, signal: AbortSignal): Promise<PoolClient> {
  signal.throwIfAborted();
  const pending = pool.connect();
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    pending.then(
      (client) => {
        signal.removeEventListener('abort', onAbort);
        // Given up on while it was coming: back to the pool, unused.
        if (signal.aborted) client.release();
        else resolve(client);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

/** The server process id of `client` (pg keeps it from the backend key data; its types omit it). */
const pidOf = (client: PoolClient) => (client as PoolClient & { processID: number }).processID;

/** `text` on `client`, rejected with the signal's reason (and cancelled on the server) on abort. */
function run<R extends QueryResultRow>(
  client: PoolClient,
  text: string,
  values: unknown[] | undefined,
  signal: AbortSignal,
  hooks: SessionHooks,
): Promise<R[]> {
  signal.throwIfAborted();
  const running = client.query<R>(text, values);
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      hooks.cancel(pidOf(client));
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    running.then(
      (result) => {
        signal.removeEventListener('abort', onAbort);
        hooks.succeeded();
        resolve(result.rows);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

/** Statements and transactions on `pool`; `hooks` hear of cancels and of the database's health. */
export function createSession(pool: Pool, hooks: SessionHooks) {
  /** A pooled connection for a request, or what the request sees when none could be obtained. */
  const connect = async (signal: AbortSignal) => {
    try {
      return await acquire(pool, signal);
    } catch (err) {
      if (!signal.aborted && !isPoolBusy(err)) hooks.unreachable(err);
      throw translateConnectFailure(err, signal);
    }
  };
  /** What a request sees of `err`, met on a connection it holds. */
  const fail = (err: unknown, signal: AbortSignal) => {
    if (!signal.aborted && isConnectionLost(err)) hooks.lost(err);
    return translate(err, signal);
  };

  return {
    /** One statement on a pooled connection. */
    async query<R extends QueryResultRow>(
      text: string,
      values: unknown[],
      signal: AbortSignal,
    ): Promise<R[]> {
      const client = await connect(signal);
      try {
        const rows = await run<R>(client, text, values, signal, hooks);
        client.release();
        return rows;
      } catch (err) {
        // An aborted or broken connection is closed, not reused.
        client.release(signal.aborted || isConnectionLost(err) ? true : undefined);
        throw fail(err, signal);
      }
    },

    /**
     * `work` in one transaction. `COMMIT` is the one commit point and is never cancelled: an abort
     * before it rolls everything back (the aborted connection is closed, which the server rolls back
     * too); once it is sent, the result stands and is returned.
     */
    async transaction<T>(signal: AbortSignal, work: (query: Query) => Promise<T>): Promise<T> {
      const client = await connect(signal);
      const query: Query = (text, values) => run(client, text, values, signal, hooks);
      let result: T;
      try {
        await query('BEGIN');
        result = await work(query);
        signal.throwIfAborted();
      } catch (err) {
        let discard = signal.aborted || isConnectionLost(err);
        if (!discard)
          discard = await client.query('ROLLBACK').then(
            () => false,
            () => true,
          );
        client.release(discard ? true : undefined);
        throw fail(err, signal);
      }
      try {
        await client.query('COMMIT');
        hooks.succeeded();
      } catch (err) {
        client.release(true);
        throw fail(err, new AbortController().signal);
      }
      client.release();
      return result;
    },
  };
}

/** The statements and transactions of one pool. */
export type Session = ReturnType<typeof createSession>;
