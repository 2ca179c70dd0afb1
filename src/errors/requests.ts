/**
 * The codes of a request's framing, routing, limits and deadline, and of the gateway's own state
 * (contract §2): every reason that is not the client's credentials, input or an upstream's fault.
 */
import type { CodeFamily } from './entry.js';

/** The request line, headers and body as HTTP carries them, and the route. */
export const REQUEST = {
  GW_REQUEST_MALFORMED: {
    status: 400,
    message: 'malformed HTTP request',
    reason: "Node's HTTP parser refused the request (its `reason` in the log is the parser's error code).",
    action: 'Send a well-formed HTTP/1.1 request; the connection is closed after this answer.',
  },
  GW_HEADERS_TOO_LARGE: {
    status: 431,
    message: 'request header fields too large',
    reason: 'The request line and headers are larger than `server.max_header_size`.',
    action: 'Send smaller headers, or raise `server.max_header_size`.',
  },
  GW_HEADERS_TIMEOUT: {
    status: 408,
    message: 'request headers were not received in time',
    reason: 'The headers did not all arrive within `server.headers_timeout`.',
    action: 'Check the client and the network between it and the gateway; send the request again.',
  },
  GW_TARGET_INVALID: {
    status: 400,
    message: 'invalid request target: <why>',
    reason:
      'The target is not a path from `/` (absolute form, `*`, `CONNECT`), holds `\\`, `#`, `%2F`, `%5C` or a NUL, is badly percent-encoded, or climbs above the root.',
    action: 'Send the path as the API documents it, without encoded separators.',
  },
  GW_HOST_MISSING: {
    status: 400,
    message: 'an HTTP/1.1 request needs a Host header',
    reason: 'An HTTP/1.1 request without `Host`.',
    action: 'Send a `Host` header.',
  },
  GW_PATH_NOT_CLEAN: {
    status: 301,
    message: 'moved permanently',
    label: 'cleaned',
    reason:
      'The path holds `//` or a dot segment; the answer (empty body) points to the cleaned path. Not an error of the client.',
    action: 'Follow the `Location` header, or send the cleaned path in the first place.',
  },
  GW_ROUTE_NOT_FOUND: {
    status: 404,
    message: 'resource not found',
    reason: 'No operation (nor pass-through) serves this path.',
    action: 'Check the path against the API; paths are case-sensitive.',
  },
  GW_ROUTE_DENIED: {
    status: 404,
    message: 'resource not found',
    reason: 'An operator route with `auth: deny` hides this path (contract §11); nothing is forwarded.',
    action:
      'Operator: remove or narrow the `routes` entry (the log line names it as `route`) if the path should be served.',
  },
  GW_METHOD_NOT_ALLOWED: {
    status: 405,
    message: 'method not allowed',
    reason: 'The path is an operation that does not take this method; `Allow` lists those it takes.',
    action: 'Use a method that `Allow` lists.',
  },
  GW_EXPECT_UNSUPPORTED: {
    status: 417,
    message: 'only "Expect: 100-continue" is supported',
    reason: 'An `Expect` header other than `100-continue`.',
    action: 'Send `Expect: 100-continue` or no `Expect` header.',
  },
  GW_HEADER_DUPLICATED: {
    status: 400,
    message: 'only one <header> header is allowed',
    reason: '`Authorization`, `RequestDate`, `Signature` or `Prefer` was sent more than once.',
    action: 'Send each of these headers once.',
  },
  GW_BODY_TOO_LARGE: {
    status: 413,
    message: 'request body is larger than the limit of <bytes> bytes',
    reason: 'The body (declared by `Content-Length`, or as read) is over `server.max_body_size`.',
    action: 'Send a smaller body, or raise `server.max_body_size`.',
  },
  GW_BODY_TIMEOUT: {
    status: 408,
    message: 'request body was not received in time',
    reason: 'The body stalled for longer than `server.body_idle_timeout`.',
    action: 'Check the client and the network; send the request again.',
  },
  GW_BODY_INCOMPLETE: {
    status: 400,
    message: 'request body was not received completely',
    reason: 'The client closed the connection before its whole body arrived.',
    action: 'Send the request again with its whole body.',
  },
} as const satisfies CodeFamily;

/** The deadline that `Prefer` sets (contract §2). */
export const DEADLINE = {
  GW_PREFER_INVALID: {
    status: 400,
    message: 'Prefer header has an invalid value: <value>',
    reason: '`Prefer` does not match `wait=<seconds>` or `wait=-1`.',
    action: 'Send `Prefer: wait=N` with N whole seconds, or no `Prefer` header for the default.',
  },
  GW_PREFER_BYPASS_DISABLED: {
    status: 400,
    message: 'Prefer header has an invalid value: failed to bypass limits: feature disabled',
    reason: '`Prefer: wait=-1` (no deadline) while `prefer.allow_bypass` is false.',
    action: 'Send a wait in seconds, or set `prefer.allow_bypass: true`.',
  },
  GW_DEADLINE_EXCEEDED: {
    status: 504,
    message: 'request timed out',
    reason:
      "The request's deadline (`Prefer`, else `prefer.default_wait`) passed; the backend call was aborted. For an upstream write, its outcome is unknown.",
    action: 'Send a longer `Prefer: wait=N` (up to `prefer.max_wait`), or look at what was slow.',
  },
  GW_CLIENT_CLOSED_REQUEST: {
    status: 499,
    message: 'client closed the request',
    reason: 'The client went away before its answer; nothing is sent, the line is logged with 499.',
    action: 'Nothing at the gateway: look at the client (its own timeout may be shorter than the wait).',
  },
} as const satisfies CodeFamily;

/** Rate limits (contract §7): the address limit and the identity's policies have a code each. */
export const RATE_LIMIT = {
  GW_RATE_LIMITED: {
    status: 429,
    message: 'rate limit exceeded',
    reason:
      'The verified identity is over a policy of `rate_limits.policies` (the log line names it as `rate_limit_policy`).',
    action: 'Wait the `Retry-After` seconds; spread requests to stay within the `RateLimit` header.',
  },
  GW_UNAUTHENTICATED_RATE_LIMITED: {
    status: 429,
    message: 'rate limit exceeded',
    reason:
      'The client address failed authentication `rate_limits.unauthenticated.limit` times within its window (`rate_limit_policy`: `unauthenticated`).',
    action: 'Fix the credentials (see the earlier refusals in the log), then wait `Retry-After` seconds.',
  },
  GW_ROUTE_RATE_LIMITED: {
    status: 429,
    message: 'rate limit exceeded',
    reason:
      "A front-door route's own `rate_limit` (the built-in `login` limit: 1 a second per client address) refused the request (`rate_limit_policy`: `route:<name>`).",
    action: 'Wait the `Retry-After` seconds before trying again.',
  },
  GW_RATE_LIMIT_STORE_UNAVAILABLE: {
    status: 503,
    message: 'rate limit store unavailable',
    label: 'rate_limit_store',
    reason: 'The rate-limit store (Redis) did not answer within its `timeout`, with `on_error: deny`.',
    action: 'Operator: bring Redis back (`/readyz` names it), or choose `on_error: allow`.',
  },
} as const satisfies CodeFamily;

/** The gateway's own state, whatever the request. */
export const SERVER = {
  GW_INTERNAL: {
    status: 500,
    message: 'an internal error occurred',
    reason: 'An unexpected failure; its details are in the log line (`err`) of this request id.',
    action: 'Operator: look up the request id in the log and report it.',
  },
  GW_PROCESS_FAULTED: {
    status: 503,
    message: 'the gateway is restarting; send the request again',
    label: 'faulted',
    reason: 'The process met an uncaught exception and is stopping; it takes no new request.',
    action: 'Send the request again (to another replica or after the restart).',
  },
  GW_STORE_UNAVAILABLE: {
    status: 503,
    message: 'store unavailable',
    reason: 'A PostgreSQL backend could not be reached or did not answer in time.',
    action: 'Operator: check the database (`/readyz`); the client may try again.',
  },
} as const satisfies CodeFamily;
