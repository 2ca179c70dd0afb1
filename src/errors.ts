/**
 * The one error type of the gateway and the catalogue of every public message.
 *
 * A stage throws a `GatewayError`; only the envelope writer (`http/envelope.ts`) turns it into bytes.
 * Library errors are translated into catalogue entries where they enter. Anything else that reaches
 * the writer is a generic 500 whose details go to the log, never to the client.
 */
export class GatewayError extends Error {
  /** HTTP status of the response. */
  readonly status: number;
  /** The part of the request at fault: `header:Prefer`, `path:asset_group_tag_id`, `form:metadata`, … */
  readonly context: string;
  /** Response headers that go with this error (`Allow` on a 405). */
  readonly headers: Readonly<Record<string, string>> | undefined;
  /** Internal reason for logs and metrics; never sent to the client. */
  readonly reason: string | undefined;
  /** Further entries of the envelope's `errors`, after this error's own (a mismatch explained). */
  readonly details: ReadonlyArray<{ readonly context: string; readonly message: string }> | undefined;
  /** Fields for the request's log line only (already bounded and cleaned); never sent. */
  readonly log: Readonly<Record<string, string>> | undefined;

  constructor(
    status: number,
    context: string,
    message: string,
    options: {
      headers?: Record<string, string>;
      reason?: string;
      cause?: unknown;
      details?: Array<{ context: string; message: string }>;
      log?: Record<string, string>;
    } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'GatewayError';
    this.status = status;
    this.context = context;
    this.headers = options.headers;
    this.reason = options.reason;
    this.details = options.details;
    this.log = options.log;
  }
}

const SIGNATURE_PREFIX = 'unable to validate request signature for client: ';

/**
 * A client-sent value as it may appear in a message (and so in a log): at most 64 characters,
 * control characters replaced, so a pasted key or a crafted value cannot flood or forge a log line.
 */
function shown(value: string): string {
  const clean = value.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
  return clean.length > 64 ? `${clean.slice(0, 64)}…` : clean;
}

/** Every public message, by the situation that produces it. */
export const errors = {
  // routing and request framing
  badTarget: (why: string) => new GatewayError(400, 'path', `invalid request target: ${why}`),
  /** Not an error of the client's: the path it sent is answered with its cleaned form (an empty body). */
  movedPermanently: (location: string) =>
    new GatewayError(301, 'path', 'moved permanently', {
      headers: { Location: location },
      reason: 'cleaned',
    }),
  notFound: (context = 'path') => new GatewayError(404, context, 'resource not found'),
  methodNotAllowed: (allow: string) =>
    new GatewayError(405, 'method', 'method not allowed', { headers: { Allow: allow } }),
  expectationFailed: () => new GatewayError(417, 'header:Expect', 'only "Expect: 100-continue" is supported'),
  missingHost: () => new GatewayError(400, 'header:Host', 'an HTTP/1.1 request needs a Host header'),
  duplicateHeader: (name: string) =>
    new GatewayError(400, `header:${name}`, `only one ${name} header is allowed`),
  requestTimeout: () => new GatewayError(408, 'request', 'request body was not received in time'),
  headersTimeout: () => new GatewayError(408, 'request', 'request headers were not received in time'),
  headersTooLarge: () => new GatewayError(431, 'header', 'request header fields too large'),
  malformedRequest: () => new GatewayError(400, 'request', 'malformed HTTP request'),
  bodyTooLarge: (limit: number) =>
    new GatewayError(413, 'body', `request body is larger than the limit of ${limit} bytes`),
  bodyAborted: () => new GatewayError(400, 'body', 'request body was not received completely'),
  internal: () => new GatewayError(500, 'server', 'an internal error occurred'),
  /** After an uncaught exception the process stops: a new request is refused, to be sent again. */
  faulted: () => new GatewayError(503, 'server', 'the gateway is restarting; send the request again'),
  // a database store that cannot be reached or did not answer (the postgres backend)
  storeUnavailable: (cause?: unknown) => new GatewayError(503, 'store', 'store unavailable', { cause }),

  // Prefer and the deadline
  preferInvalid: (value: string) =>
    new GatewayError(400, 'header:Prefer', `Prefer header has an invalid value: ${shown(value)}`),
  preferBypassDisabled: () =>
    new GatewayError(
      400,
      'header:Prefer',
      'Prefer header has an invalid value: failed to bypass limits: feature disabled',
    ),
  deadline: () => new GatewayError(504, 'request', 'request timed out'),
  /** Never sent (the client is gone): the reason a backend call is aborted for a disconnect. */
  clientGone: () => new GatewayError(499, 'request', 'client closed the request'),

  // upstream services (the reason, for the log and the metric, is the failure's kind)
  upstreamUnavailable: (kind: string) =>
    new GatewayError(502, 'upstream', 'upstream service unavailable', { reason: kind }),
  upstreamTimeout: (kind: string) =>
    new GatewayError(504, 'upstream', 'upstream service timed out', { reason: kind }),
  upstreamBadAnswer: (why: string, cause?: unknown) =>
    new GatewayError(502, 'upstream', 'upstream service sent an invalid answer', { reason: why, cause }),

  // authentication (literal messages of the reference service)
  /** `reason`: why a client certificate is no identity; absent for a request with no credentials. */
  notAuthenticated: (reason?: string) =>
    new GatewayError(
      401,
      'header:Authorization',
      'not authenticated',
      reason === undefined ? {} : { reason },
    ),
  authTwoComponents: () =>
    new GatewayError(
      400,
      'header:Authorization',
      'Expected only two components for the Authorization header.',
    ),
  authUnknownScheme: (scheme: string) =>
    new GatewayError(
      400,
      'header:Authorization',
      `Unexpected authorization scheme: ${/^[a-z0-9-]{1,20}$/.test(scheme) ? scheme : '<not shown>'}.`,
    ),
  /** `log`: fields for the request's log line (the unknown `kid`, cut and cleaned). */
  tokenFailed: (reason: string, log?: Record<string, string>) =>
    new GatewayError(401, 'header:Authorization', 'Token Authorization failed.', {
      reason,
      ...(log ? { log } : {}),
    }),
  tokenIdMalformed: () =>
    new GatewayError(400, 'header:Authorization', 'Token ID is malformed.', { reason: 'malformed_token_id' }),
  noRequestDate: () =>
    new GatewayError(400, 'header:RequestDate', `${SIGNATURE_PREFIX}no request date header`, {
      reason: 'no_date',
    }),
  malformedRequestDate: (why: string) =>
    new GatewayError(400, 'header:RequestDate', `${SIGNATURE_PREFIX}malformed request date: ${why}`, {
      reason: 'malformed_date',
    }),
  noSignature: () =>
    new GatewayError(400, 'header:Signature', `${SIGNATURE_PREFIX}no signature header`, {
      reason: 'no_signature',
    }),
  malformedSignature: (why: string) =>
    new GatewayError(400, 'header:Signature', `${SIGNATURE_PREFIX}malformed signature header: ${why}`, {
      reason: 'malformed_signature',
    }),
  /** An unknown, revoked or expired token id: one answer for all three, the `reason` tells them apart. */
  unknownToken: (reason = 'unknown_token') =>
    new GatewayError(401, 'header:Authorization', `${SIGNATURE_PREFIX}resource not found`, { reason }),
  clockSkew: (direction: 'behind' | 'ahead', minutes: string, server: string, client: string) =>
    new GatewayError(
      401,
      'header:RequestDate',
      `${SIGNATURE_PREFIX}signature too far ${direction} by ${minutes} minutes. Server time is ${server}. Client time is ${client}`,
      { reason: 'clock_skew' },
    ),
  utcOffset: () =>
    new GatewayError(
      401,
      'header:RequestDate',
      `${SIGNATURE_PREFIX}request date offset exceeds max_utc_offset`,
      { reason: 'utc_offset' },
    ),
  /** `signed`: what the gateway signed (`signed: <METHOD> <target> | hour … | body …`), a second error. */
  digestMismatch: (signed?: string) =>
    new GatewayError(
      401,
      'header:Signature',
      `${SIGNATURE_PREFIX}digest validation failed: signature digest mismatch`,
      {
        reason: 'digest_mismatch',
        ...(signed === undefined ? {} : { details: [{ context: 'signature', message: signed }] }),
      },
    ),
  notAuthorized: () => new GatewayError(403, 'permission', 'not authorized'),

  // rate limits (contract §7): `retryAfter` in whole seconds
  rateLimited: (retryAfter: number) =>
    new GatewayError(429, 'rate_limit', 'rate limit exceeded', {
      headers: { 'Retry-After': String(retryAfter) },
      reason: 'rate_limited',
    }),
  rateLimitStoreUnavailable: () =>
    new GatewayError(503, 'rate_limit', 'rate limit store unavailable', { reason: 'rate_limit_store' }),

  // path parameters
  idMalformed: (param: string) => new GatewayError(400, `path:${param}`, 'id is malformed'),
  invalidCollectorType: (value: string) =>
    new GatewayError(400, 'path:collector_type', `Invalid collector type: ${shown(value)}`),
  invalidReleaseTag: () =>
    new GatewayError(
      400,
      'path:release_tag',
      'release tag must be "latest" or a semantic version such as v1.2.3',
    ),

  // the SSO provider form
  notMultipart: () =>
    new GatewayError(400, 'header:Content-Type', 'Content-Type must be multipart/form-data with a boundary'),
  emptyBody: () => new GatewayError(400, 'body', 'request body is empty'),
  malformedForm: (why: string) => new GatewayError(400, 'body', `malformed multipart form: ${why}`),
  formTooLarge: (what: string) => new GatewayError(413, 'body', `multipart form is over the limit: ${what}`),
  partTooLarge: (name: string, limit: number) =>
    new GatewayError(413, `form:${name}`, `form part "${name}" is larger than the limit of ${limit} bytes`),
  unexpectedPart: (name: string) =>
    new GatewayError(400, `form:${shown(name)}`, `unexpected form part "${shown(name)}"`),
  duplicatePart: (name: string) =>
    new GatewayError(400, `form:${name}`, `expected only one "${name}" parameter`),
  partMustBeFile: (name: string) =>
    new GatewayError(400, `form:${name}`, `"${name}" parameter must be a file with a filename`),
  partMustBeText: (name: string) =>
    new GatewayError(400, `form:${name}`, `"${name}" parameter must be a text field, not a file`),
  invalidText: (name: string) =>
    new GatewayError(
      400,
      `form:${name}`,
      `"${name}" parameter must be valid UTF-8 text without NUL characters`,
    ),
  invalidName: (why: string) => new GatewayError(400, 'form:name', `"name" parameter is invalid: ${why}`),
  missingPart: (name: string) => new GatewayError(400, `form:${name}`, `form is missing "${name}" parameter`),
  notBool: (name: string) =>
    new GatewayError(400, `form:${name}`, `"${name}" parameter could not be converted to bool`),
  notInt: (name: string) =>
    new GatewayError(400, `form:${name}`, `"${name}" parameter could not be converted to int`),
  invalidParameter: (name: string) => new GatewayError(400, `form:${name}`, `"${name}" parameter is invalid`),
  metadataMalformed: (why: string) =>
    new GatewayError(400, 'form:metadata', `metadata is not well-formed XML: ${why}`),
  metadataTooDeep: (depth: number) =>
    new GatewayError(400, 'form:metadata', `metadata nests elements more than ${depth} deep`),
  metadataDoctype: () =>
    new GatewayError(400, 'form:metadata', 'metadata must not contain a DOCTYPE or entity declaration'),
  metadataNotSaml: () =>
    new GatewayError(
      400,
      'form:metadata',
      'metadata is not a SAML 2.0 EntityDescriptor or EntitiesDescriptor',
    ),
  metadataNoPostBinding: () =>
    new GatewayError(
      400,
      'form:metadata',
      'metadata does not have a SSO service that supports HTTP POST binding',
    ),
  metadataMissingAttribute: (attribute: 'entityID' | 'Location') =>
    new GatewayError(400, 'form:metadata', `metadata is missing the ${attribute} attribute`),
} as const;

/** True when `err` is the catalogue's error type. */
export function isGatewayError(err: unknown): err is GatewayError {
  return err instanceof GatewayError;
}
