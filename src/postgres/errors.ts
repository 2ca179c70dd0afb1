/**
 * Where node-postgres errors enter the gateway, classified by where they happened:
 * - no connection could be obtained: the database is away (503 `store unavailable`, not ready), unless
 *   the pool was only busy (503, still ready);
 * - inside a session: a lost connection, `statement_timeout` or `lock_timeout` is 503, an aborted
 *   request gets its deadline's reason (504), anything else stays an unexpected error (500, details
 *   in the log). So `55000` (object not in prerequisite state) refuses a connection as the database
 *   being away, but inside a transaction it is a 500 like any other statement error.
 */
import { errors, isGatewayError } from '../errors.js';

/** Socket-level failures: the connection is gone, or was never made. */
const NETWORK = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);

/**
 * SQLSTATEs that end a session: class 08 (connection exception) and a server shutting down, crashed
 * or starting (57P01-57P03, sent when a backend is terminated too).
 */
const LOST_STATES = /^(08...|57P0[123])$/;

/** node-postgres' own messages for a connection that died or is no longer usable. */
const LOST_MESSAGES = [
  'Connection terminated',
  'Client has encountered a connection error',
  'Client was closed and is not queryable',
];

/** The pool had no free connection within `connect_timeout`: busy, not down. */
const POOL_WAIT_TIMEOUT = 'timeout exceeded when trying to connect';

/** SQLSTATEs of a statement stopped by the server's `statement_timeout` or `lock_timeout`. */
const STORE_TIMEOUTS = new Set(['57014', '55P03']);

interface PgLikeError {
  code?: unknown;
  message?: unknown;
}

const fields = (err: unknown): PgLikeError => (typeof err === 'object' && err !== null ? err : {});

/** True when `err`, met inside a session, says its connection is gone (so it must not be reused). */
export function isConnectionLost(err: unknown): boolean {
  const { code, message } = fields(err);
  if (typeof code === 'string' && (NETWORK.has(code) || LOST_STATES.test(code))) return true;
  return typeof message === 'string' && LOST_MESSAGES.some((m) => message.startsWith(m));
}

/** True when `err` from `pool.connect()` only says that every pooled connection stayed busy. */
export function isPoolBusy(err: unknown): boolean {
  return fields(err).message === POOL_WAIT_TIMEOUT;
}

/**
 * The error a request sees when no connection could be obtained under `signal`: its deadline's
 * reason when it was aborted, else 503 whatever the cause (refused, unreachable, TLS, login, too
 * many connections, shutting down, not accepting connections, busy pool).
 */
export function translateConnectFailure(err: unknown, signal: AbortSignal): unknown {
  if (signal.aborted) return signal.reason;
  return errors.storeUnavailable(err);
}

/**
 * The error a request sees for `err`, thrown inside a session under `signal`. An aborted request
 * gets its deadline's reason whatever pg said (a cancelled statement is an abort, not a database
 * fault); a lost connection or a server-side timeout is 503; anything else is returned as it is.
 */
export function translate(err: unknown, signal: AbortSignal): unknown {
  if (isGatewayError(err)) return err;
  if (signal.aborted) return signal.reason;
  if (isConnectionLost(err)) return errors.storeUnavailable(err);
  const { code } = fields(err);
  if (typeof code === 'string' && STORE_TIMEOUTS.has(code)) return errors.storeUnavailable(err);
  return err;
}
