/**
 * Where node-postgres errors enter the gateway: each one becomes the request's abort reason (504),
 * the catalogue's 503 `store unavailable`, or stays an unexpected error (500, details in the log).
 */
import { errors, isGatewayError } from '../../errors.js';

/** Socket-level failures: the database cannot be reached at all. */
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
 * SQLSTATEs that mean "this database cannot serve now": class 08 (connection exception), a server
 * shutting down or starting (57P01-57P03), too many connections, a missing database, refused login.
 */
const UNAVAILABLE_STATES = /^(08...|57P0[123]|53300|3D000|28000|28P01)$/;

/** node-postgres' own messages for a connection that died, never opened or could not open in time. */
const CONNECTION_MESSAGES = [
  'Connection terminated',
  'Client has encountered a connection error',
  'Client was closed and is not queryable',
  'timeout expired',
];

/** The pool had no free connection within `connect_timeout`: busy, not down. */
const POOL_WAIT_TIMEOUT = 'timeout exceeded when trying to connect';

/** SQLSTATEs of a statement stopped by the server's `statement_timeout` or `lock_timeout`. */
const STORE_TIMEOUTS = new Set(['57014', '55P03']);

interface PgLikeError {
  code?: unknown;
  message?: unknown;
}

/** True when `err` says the database is unreachable (so readiness must go false). */
export function isConnectionError(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const { code, message } = err as PgLikeError;
  if (typeof code === 'string' && (NETWORK.has(code) || UNAVAILABLE_STATES.test(code))) return true;
  return typeof message === 'string' && CONNECTION_MESSAGES.some((m) => message.startsWith(m));
}

/**
 * The error a request sees for `err`, thrown while working under `signal`. An aborted request gets
 * its deadline's reason whatever pg said (a cancelled statement is an abort, not a database fault);
 * an unreachable, busy or timed-out database is 503; anything else is returned as it is.
 */
export function translate(err: unknown, signal: AbortSignal): unknown {
  if (isGatewayError(err)) return err;
  if (signal.aborted) return signal.reason;
  if (isConnectionError(err)) return errors.storeUnavailable(err);
  const { code, message } = (typeof err === 'object' && err !== null ? err : {}) as PgLikeError;
  if (message === POOL_WAIT_TIMEOUT) return errors.storeUnavailable(err);
  if (typeof code === 'string' && STORE_TIMEOUTS.has(code)) return errors.storeUnavailable(err);
  return err;
}
