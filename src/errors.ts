/**
 * The one error type of the gateway and the catalogue of every public message.
 *
 * A stage throws a `GatewayError`; only the envelope writer (`http/envelope.ts`) turns it into bytes.
 * Library errors are translated into catalogue entries where they enter. Anything else that reaches
 * the writer is a generic 500 whose details go to the log, never to the client.
 *
 * Every error carries a stable code (`GW_…`, contract §2), one per reason: a factory finds it from
 * the reason it is given, so no caller names codes. The codes, their statuses and their messages
 * (`<…>` where a factory fills in a value) are kept in `errors/` by family, which `npm run docs:gen`
 * turns into the table of `docs/reference/error-codes.md`.
 */
import {
  type BearerReason,
  CODES,
  codeOf,
  type ErrorCode,
  type UpstreamAnswerKind,
  type UpstreamTimeoutKind,
} from './errors/catalogue.js';

export { CODE_FAMILIES, CODES, type ErrorCode } from './errors/catalogue.js';

/** The one error type: a code, its status, the part of the request at fault, and the public message. */
export class GatewayError extends Error {
  /** The stable code of the reason: in the request's log line as `error_code`, never on the wire. */
  readonly code: ErrorCode;
  /** HTTP status of the response, the code's. */
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
    code: ErrorCode,
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
    this.code = code;
    this.status = CODES[code].status;
    this.context = context;
    this.headers = options.headers;
    this.reason = options.reason;
    this.details = options.details;
    this.log = options.log;
  }
}

type Options = ConstructorParameters<typeof GatewayError>[3];
const PLACEHOLDER = /<[^>]+>/g;

/** The error of `code`, its message the catalogue's with each `<…>` replaced by the next of `values`. */
function make(
  code: ErrorCode,
  context: string,
  values: ReadonlyArray<string | number> = [],
  options?: Options,
) {
  let i = 0;
  const message =
    values.length === 0
      ? CODES[code].message
      : CODES[code].message.replace(PLACEHOLDER, () => String(values[i++]));
  return new GatewayError(code, context, message, options);
}
/**
 * A client-sent value as it may appear in a message (and so in a log): at most 64 characters,
 * control characters replaced, so a pasted key or a crafted value cannot flood or forge a log line.
 */
function shown(value: string): string {
  const clean = value.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
  return clean.length > 64 ? `${clean.slice(0, 64)}…` : clean;
}

/** Every error the gateway answers with, by the situation that produces it (messages: `errors/`). */
export const errors = {
  // routing and request framing
  badTarget: (why: string) => make('GW_TARGET_INVALID', 'path', [why]),
  /** Not an error of the client's: the path it sent is answered with its cleaned form (an empty body). */
  movedPermanently: (location: string) =>
    make('GW_PATH_NOT_CLEAN', 'path', [], { headers: { Location: location }, reason: 'cleaned' }),
  /** No route for the path (`path`), or no resource for a path parameter (`path:<param>`). */
  notFound: (context = 'path') =>
    make(context === 'path' ? 'GW_ROUTE_NOT_FOUND' : 'GW_RESOURCE_NOT_FOUND', context),
  /** An operator route with `auth: deny`: as if the path did not exist. */
  routeDenied: () => make('GW_ROUTE_DENIED', 'path'),
  methodNotAllowed: (allow: string) =>
    make('GW_METHOD_NOT_ALLOWED', 'method', [], { headers: { Allow: allow } }),
  expectationFailed: () => make('GW_EXPECT_UNSUPPORTED', 'header:Expect'),
  missingHost: () => make('GW_HOST_MISSING', 'header:Host'),
  duplicateHeader: (name: string) => make('GW_HEADER_DUPLICATED', `header:${name}`, [name]),
  requestTimeout: () => make('GW_BODY_TIMEOUT', 'request'),
  headersTimeout: () => make('GW_HEADERS_TIMEOUT', 'request'),
  headersTooLarge: () => make('GW_HEADERS_TOO_LARGE', 'header'),
  malformedRequest: () => make('GW_REQUEST_MALFORMED', 'request'),
  bodyTooLarge: (limit: number) => make('GW_BODY_TOO_LARGE', 'body', [limit]),
  bodyAborted: () => make('GW_BODY_INCOMPLETE', 'body'),
  internal: () => make('GW_INTERNAL', 'server'),
  /** After an uncaught exception the process stops: a new request is refused, to be sent again. */
  faulted: () => make('GW_PROCESS_FAULTED', 'server'),
  // a database store that cannot be reached or did not answer (the postgres backend)
  storeUnavailable: (cause?: unknown) => make('GW_STORE_UNAVAILABLE', 'store', [], { cause }),
  /** A change made whose audit outcome entry could not be written: the change stands (contract §12). */
  auditOutcomeLost: (cause?: unknown) =>
    make('GW_AUDIT_OUTCOME_LOST', 'audit', [], { reason: 'audit_outcome_lost', cause }),

  // Prefer and the deadline
  preferInvalid: (value: string) => make('GW_PREFER_INVALID', 'header:Prefer', [shown(value)]),
  preferBypassDisabled: () => make('GW_PREFER_BYPASS_DISABLED', 'header:Prefer'),
  deadline: () => make('GW_DEADLINE_EXCEEDED', 'request'),
  /** Never sent (the client is gone): the reason a backend call is aborted for a disconnect. */
  clientGone: () => make('GW_CLIENT_CLOSED_REQUEST', 'request'),

  // upstream services (the reason, for the log and the metric, is the failure's kind; each its code)
  /** Unreachable or dropped: `connect`, `dns`, `connect_timeout`, `reset`; any other kind is `other`'s. */
  upstreamUnavailable: (kind: string) =>
    make(codeOf.unavailable(kind) ?? 'GW_UPSTREAM_FAILED', 'upstream', [], { reason: kind }),
  upstreamTimeout: (kind: UpstreamTimeoutKind) =>
    make(codeOf.timeout(kind), 'upstream', [], { reason: kind }),
  upstreamBadAnswer: (why: UpstreamAnswerKind, cause?: unknown) =>
    make(codeOf.badAnswer(why), 'upstream', [], { reason: why, cause }),

  // authentication (literal messages of the reference service)
  /** No identity: no credentials at all (`missing`), or a client certificate that gives none. */
  notAuthenticated: (reason: 'missing' | 'unknown_certificate' | 'untrusted_certificate' = 'missing') =>
    make(codeOf.authentication(reason), 'header:Authorization'),
  authTwoComponents: () => make('GW_AUTH_HEADER_MALFORMED', 'header:Authorization'),
  /** The scheme is echoed only in a form that cannot be a key pasted in the wrong place. */
  authUnknownScheme: (scheme: string) =>
    make('GW_AUTH_SCHEME_UNKNOWN', 'header:Authorization', [
      /^[a-z0-9-]{1,20}$/.test(scheme) ? scheme : '<not shown>',
    ]),
  /** `log`: fields for the request's log line (the unknown `kid`, cut and cleaned). */
  tokenFailed: (reason: BearerReason, log?: Record<string, string>) =>
    make(codeOf.bearer(reason), 'header:Authorization', [], { reason, ...(log ? { log } : {}) }),
  tokenIdMalformed: () => make('GW_TOKEN_ID_MALFORMED', 'header:Authorization'),
  noRequestDate: () => make('GW_REQUEST_DATE_MISSING', 'header:RequestDate'),
  malformedRequestDate: (why: string) => make('GW_REQUEST_DATE_MALFORMED', 'header:RequestDate', [why]),
  noSignature: () => make('GW_SIGNATURE_MISSING', 'header:Signature'),
  malformedSignature: (why: string) => make('GW_SIGNATURE_MALFORMED', 'header:Signature', [why]),
  /** An unknown, revoked or expired token id: one answer for all three, the `reason` tells them apart. */
  unknownToken: (reason: 'unknown_token' | 'revoked_token' | 'expired_token' = 'unknown_token') =>
    make(codeOf.signature(reason), 'header:Authorization', [], { reason }),
  clockSkew: (direction: 'behind' | 'ahead', minutes: string, server: string, client: string) =>
    make('GW_CLOCK_SKEW', 'header:RequestDate', [direction, minutes, server, client], {
      reason: 'clock_skew',
    }),
  utcOffset: () => make('GW_UTC_OFFSET_EXCEEDED', 'header:RequestDate', [], { reason: 'utc_offset' }),
  /** `signed`: what the gateway signed (`signed: <METHOD> <target> | hour … | body …`), a second error. */
  digestMismatch: (signed?: string) =>
    make('GW_SIGNATURE_MISMATCH', 'header:Signature', [], {
      reason: 'digest_mismatch',
      ...(signed === undefined ? {} : { details: [{ context: 'signature', message: signed }] }),
    }),
  notAuthorized: () => make('GW_PERMISSION_DENIED', 'permission'),

  // rate limits (contract §7): `retryAfter` in whole seconds; `policy` names the limit that refused
  rateLimited: (retryAfter: number, policy: string) =>
    make(
      policy === 'unauthenticated' ? 'GW_UNAUTHENTICATED_RATE_LIMITED' : 'GW_RATE_LIMITED',
      'rate_limit',
      [],
      {
        headers: { 'Retry-After': String(retryAfter) },
        reason: 'rate_limited',
      },
    ),
  /** A front-door route's own limit (contract §11): `Retry-After` only, no `RateLimit*` header. */
  routeRateLimited: (retryAfter: number) =>
    make('GW_ROUTE_RATE_LIMITED', 'rate_limit', [], {
      headers: { 'Retry-After': String(retryAfter) },
      reason: 'rate_limited',
    }),
  rateLimitStoreUnavailable: () =>
    make('GW_RATE_LIMIT_STORE_UNAVAILABLE', 'rate_limit', [], { reason: 'rate_limit_store' }),

  // path parameters
  idMalformed: (param: string) => make('GW_ID_MALFORMED', `path:${param}`),
  invalidCollectorType: (value: string) =>
    make('GW_COLLECTOR_TYPE_INVALID', 'path:collector_type', [shown(value)]),
  invalidReleaseTag: () => make('GW_RELEASE_TAG_INVALID', 'path:release_tag'),

  // the SSO provider form
  notMultipart: () => make('GW_CONTENT_TYPE_NOT_MULTIPART', 'header:Content-Type'),
  emptyBody: () => make('GW_BODY_EMPTY', 'body'),
  malformedForm: (why: string) => make('GW_FORM_MALFORMED', 'body', [why]),
  formTooLarge: (what: string) => make('GW_FORM_TOO_LARGE', 'body', [what]),
  partTooLarge: (name: string, limit: number) =>
    make('GW_FORM_PART_TOO_LARGE', `form:${name}`, [name, limit]),
  unexpectedPart: (name: string) => make('GW_FORM_PART_UNEXPECTED', `form:${shown(name)}`, [shown(name)]),
  duplicatePart: (name: string) => make('GW_FORM_PART_DUPLICATED', `form:${name}`, [name]),
  partMustBeFile: (name: string) => make('GW_FORM_PART_NOT_FILE', `form:${name}`, [name]),
  partMustBeText: (name: string) => make('GW_FORM_PART_NOT_TEXT', `form:${name}`, [name]),
  invalidText: (name: string) => make('GW_FORM_TEXT_INVALID', `form:${name}`, [name]),
  invalidName: (why: string) => make('GW_NAME_INVALID', 'form:name', [why]),
  missingPart: (name: string) => make('GW_FORM_PART_MISSING', `form:${name}`, [name]),
  notBool: (name: string) => make('GW_FORM_PART_NOT_BOOL', `form:${name}`, [name]),
  notInt: (name: string) => make('GW_FORM_PART_NOT_INT', `form:${name}`, [name]),
  invalidParameter: (name: string) => make('GW_FORM_PART_INVALID', `form:${name}`, [name]),
  metadataMalformed: (why: string) => make('GW_METADATA_MALFORMED', 'form:metadata', [why]),
  metadataTooDeep: (depth: number) => make('GW_METADATA_TOO_DEEP', 'form:metadata', [depth]),
  metadataDoctype: () => make('GW_METADATA_DOCTYPE', 'form:metadata'),
  metadataNotSaml: () => make('GW_METADATA_NOT_SAML', 'form:metadata'),
  metadataNoPostBinding: () => make('GW_METADATA_NO_POST_BINDING', 'form:metadata'),
  metadataMissingAttribute: (attribute: 'entityID' | 'Location') =>
    make('GW_METADATA_ATTRIBUTE_MISSING', 'form:metadata', [attribute]),

  // the audit trail (contract §12) and its read API's query, the reference's wording; a parameter's
  // name is shown only when it is a plain name
  /** The `intent` entry could not be made durable: the change is not made. */
  auditUnavailable: (cause?: unknown) =>
    make('GW_AUDIT_UNAVAILABLE', 'audit', [], { reason: 'audit_unavailable', cause }),
  auditQueryMalformed: (parameter: string, why: string) =>
    make('GW_AUDIT_QUERY_MALFORMED', queryContext(parameter), [queryName(parameter), why]),
  auditEmptySort: () => make('GW_AUDIT_SORT_EMPTY', 'query:sort_by'),
  auditNotSortable: () => make('GW_AUDIT_SORT_INVALID', 'query:sort_by'),
  auditBadFilters: (parameter: string) => make('GW_AUDIT_FILTER_INVALID', queryContext(parameter)),
  auditNotFilterable: (parameter: string) =>
    make('GW_AUDIT_FILTER_COLUMN', queryContext(parameter), [queryName(parameter)]),
  auditPredicateNotSupported: (column: string, predicate: string) =>
    make('GW_AUDIT_FILTER_PREDICATE', `query:${column}`, [column, predicate]),
} as const;

/** A query parameter's name as a message may show it: a plain name, else a placeholder. */
function queryName(name: string): string {
  return /^[A-Za-z0-9_.~-]{1,64}$/.test(name) ? name : '<not shown>';
}

function queryContext(name: string): string {
  return /^[A-Za-z0-9_.~-]{1,64}$/.test(name) ? `query:${name}` : 'query';
}

/** True when `err` is the catalogue's error type. */
export function isGatewayError(err: unknown): err is GatewayError {
  return err instanceof GatewayError;
}
