/**
 * The catalogue's stable error codes (contract §2): every code well-formed and unique, one code per
 * reason that the log and metrics name, and each status and message as the contract writes it.
 */
import t from 'tap';
import { CODE_FAMILIES, CODES, type ErrorCode, errors, type GatewayError } from '../src/errors.js';
import { AUTH_FAILURES } from '../src/auth/authenticate.js';
import { kindOf } from '../src/upstream/endpoint.js';

const SIGNED = 'unable to validate request signature for client: ';

/** Every factory of the catalogue, called as the gateway calls it. */
const MADE: Record<keyof typeof errors, GatewayError[]> = {
  badTarget: [errors.badTarget('must not contain "#"')],
  movedPermanently: [errors.movedPermanently('/api/v2/x')],
  notFound: [errors.notFound(), errors.notFound('path:sso_provider_id')],
  routeDenied: [errors.routeDenied()],
  methodNotAllowed: [errors.methodNotAllowed('GET, HEAD')],
  expectationFailed: [errors.expectationFailed()],
  missingHost: [errors.missingHost()],
  duplicateHeader: [errors.duplicateHeader('Prefer')],
  requestTimeout: [errors.requestTimeout()],
  headersTimeout: [errors.headersTimeout()],
  headersTooLarge: [errors.headersTooLarge()],
  malformedRequest: [errors.malformedRequest()],
  bodyTooLarge: [errors.bodyTooLarge(10)],
  bodyAborted: [errors.bodyAborted()],
  internal: [errors.internal()],
  faulted: [errors.faulted()],
  storeUnavailable: [errors.storeUnavailable()],
  auditOutcomeLost: [errors.auditOutcomeLost()],
  routeRateLimited: [errors.routeRateLimited(1)],
  preferInvalid: [errors.preferInvalid('wait=soon')],
  preferBypassDisabled: [errors.preferBypassDisabled()],
  deadline: [errors.deadline()],
  clientGone: [errors.clientGone()],
  upstreamUnavailable: ['connect', 'dns', 'connect_timeout', 'reset', 'other', 'all_out'].map((k) =>
    errors.upstreamUnavailable(k),
  ),
  upstreamTimeout: [errors.upstreamTimeout('headers_timeout'), errors.upstreamTimeout('body_timeout')],
  upstreamBadAnswer: (['protocol', 'status', 'too_large', 'truncated', 'no_version'] as const).map((k) =>
    errors.upstreamBadAnswer(k),
  ),
  notAuthenticated: [
    errors.notAuthenticated(),
    errors.notAuthenticated('unknown_certificate'),
    errors.notAuthenticated('untrusted_certificate'),
  ],
  authTwoComponents: [errors.authTwoComponents()],
  authUnknownScheme: [errors.authUnknownScheme('digest')],
  tokenFailed: (AUTH_FAILURES.bearer as Parameters<typeof errors.tokenFailed>[0][]).map((r) =>
    errors.tokenFailed(r),
  ),
  tokenIdMalformed: [errors.tokenIdMalformed()],
  noRequestDate: [errors.noRequestDate()],
  malformedRequestDate: [errors.malformedRequestDate('no time zone offset')],
  noSignature: [errors.noSignature()],
  malformedSignature: [errors.malformedSignature('not padded standard base64')],
  unknownToken: [
    errors.unknownToken(),
    errors.unknownToken('revoked_token'),
    errors.unknownToken('expired_token'),
  ],
  clockSkew: [errors.clockSkew('behind', '1.50', '2024-01-01T12:00:00Z', '2024-01-01T09:30:00Z')],
  utcOffset: [errors.utcOffset()],
  digestMismatch: [errors.digestMismatch(), errors.digestMismatch('signed: GET /x | hour … | body 0 bytes')],
  notAuthorized: [errors.notAuthorized()],
  rateLimited: [errors.rateLimited(3, 'default'), errors.rateLimited(3, 'unauthenticated')],
  rateLimitStoreUnavailable: [errors.rateLimitStoreUnavailable()],
  idMalformed: [errors.idMalformed('asset_group_tag_id')],
  invalidCollectorType: [errors.invalidCollectorType('bloodhound')],
  invalidReleaseTag: [errors.invalidReleaseTag()],
  notMultipart: [errors.notMultipart()],
  emptyBody: [errors.emptyBody()],
  malformedForm: [errors.malformedForm('Unexpected end of form')],
  formTooLarge: [errors.formTooLarge('more than 10 parts')],
  partTooLarge: [errors.partTooLarge('metadata', 1024)],
  unexpectedPart: [errors.unexpectedPart('colour')],
  duplicatePart: [errors.duplicatePart('name')],
  partMustBeFile: [errors.partMustBeFile('metadata')],
  partMustBeText: [errors.partMustBeText('name')],
  invalidText: [errors.invalidText('name')],
  invalidName: [errors.invalidName('must not be empty')],
  missingPart: [errors.missingPart('config.auto_provision.enabled')],
  notBool: [errors.notBool('config.auto_provision.enabled')],
  notInt: [errors.notInt('config.auto_provision.default_role_id')],
  invalidParameter: [errors.invalidParameter('config.auto_provision.default_role_id')],
  metadataMalformed: [errors.metadataMalformed('unclosed tag')],
  metadataTooDeep: [errors.metadataTooDeep(64)],
  metadataDoctype: [errors.metadataDoctype()],
  metadataNotSaml: [errors.metadataNotSaml()],
  metadataNoPostBinding: [errors.metadataNoPostBinding()],
  metadataMissingAttribute: [errors.metadataMissingAttribute('entityID')],
  auditUnavailable: [errors.auditUnavailable()],
  auditQueryMalformed: [errors.auditQueryMalformed('limit', 'limit must not exceed 1000')],
  auditEmptySort: [errors.auditEmptySort()],
  auditNotSortable: [errors.auditNotSortable()],
  auditBadFilters: [errors.auditBadFilters('status')],
  auditNotFilterable: [errors.auditNotFilterable('fields')],
  auditPredicateNotSupported: [errors.auditPredicateNotSupported('status', 'gt')],
};
const made = Object.values(MADE).flat();

/** A catalogue message as a pattern: each `<…>` stands for some text. */
const template = (message: string) =>
  new RegExp(
    `^${message
      .split(/<[^>]+>/)
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.+')}$`,
  );

t.test('every code is GW_ and upper-case words joined by _, and unique across the families', async (t) => {
  const listed = CODE_FAMILIES.flatMap(([, family]) => Object.keys(family));
  t.equal(new Set(listed).size, listed.length, 'no code in two families');
  t.same(new Set(listed), new Set(Object.keys(CODES)), 'the families are the catalogue');
  for (const code of listed) t.match(code, /^GW_[A-Z0-9]+(_[A-Z0-9]+)*$/, code);
  for (const [title, family] of CODE_FAMILIES) {
    const labels = Object.values(family).flatMap((e) => (e.label === undefined ? [] : [e.label]));
    t.equal(new Set(labels).size, labels.length, `${title}: one code per reason label`);
    for (const [code, entry] of Object.entries(family)) {
      t.ok(entry.reason.length > 0 && entry.action.length > 0, `${code} says why and what to do`);
    }
  }
});

t.test('every code is made by a factory, with its status and a message of its template', async (t) => {
  t.same(new Set(made.map((e) => e.code)), new Set(Object.keys(CODES)), 'no code without a factory');
  for (const error of made) {
    const entry = CODES[error.code];
    t.equal(error.status, entry.status, `${error.code} status`);
    t.match(error.message, template(entry.message), `${error.code} message`);
    t.notOk(error.message.includes('undefined'), `${error.code}: every placeholder filled`);
  }
});

t.test('one code per reason the log and metrics name', async (t) => {
  const codeOf = (labels: readonly string[], make: (label: string) => GatewayError) =>
    labels.map((label) => make(label).code);
  const signatureFactories: Record<string, () => GatewayError> = {
    malformed_token_id: errors.tokenIdMalformed,
    no_date: errors.noRequestDate,
    no_signature: errors.noSignature,
    malformed_date: () => errors.malformedRequestDate('x'),
    malformed_signature: () => errors.malformedSignature('x'),
    unknown_token: () => errors.unknownToken('unknown_token'),
    revoked_token: () => errors.unknownToken('revoked_token'),
    expired_token: () => errors.unknownToken('expired_token'),
    utc_offset: errors.utcOffset,
    clock_skew: () => errors.clockSkew('ahead', '1.00', 'a', 'b'),
    digest_mismatch: errors.digestMismatch,
  };
  const none: Record<string, () => GatewayError> = {
    missing: () => errors.notAuthenticated(),
    malformed_header: errors.authTwoComponents,
    unknown_scheme: () => errors.authUnknownScheme('x'),
  };
  t.same(Object.keys(signatureFactories).sort(), [...(AUTH_FAILURES.signature ?? [])].sort());
  t.same(Object.keys(none).sort(), [...(AUTH_FAILURES.none ?? [])].sort());
  const codes = [
    ...codeOf(Object.keys(none), (r) => (none[r] as () => GatewayError)()),
    ...codeOf(Object.keys(signatureFactories), (r) => (signatureFactories[r] as () => GatewayError)()),
    ...codeOf(AUTH_FAILURES.bearer ?? [], (r) =>
      errors.tokenFailed(r as Parameters<typeof errors.tokenFailed>[0]),
    ),
    ...codeOf(AUTH_FAILURES.client_certificate ?? [], (r) =>
      errors.notAuthenticated(r as 'unknown_certificate'),
    ),
  ];
  t.equal(new Set(codes).size, codes.length, 'every authentication reason has a code of its own');
  for (const code of codes) {
    const label = CODES[code as ErrorCode].label;
    t.ok(label !== undefined, `${code} names its reason label`);
  }
  const kinds = ['connect', 'dns', 'connect_timeout', 'reset', 'other', 'all_out'].map((k) =>
    errors.upstreamUnavailable(k),
  );
  kinds.push(errors.upstreamTimeout('headers_timeout'), errors.upstreamTimeout('body_timeout'));
  for (const k of ['protocol', 'status', 'too_large', 'truncated', 'no_version'] as const)
    kinds.push(errors.upstreamBadAnswer(k));
  t.equal(new Set(kinds.map((e) => e.code)).size, kinds.length, 'every upstream kind has a code of its own');
  for (const e of kinds) t.equal(CODES[e.code].label, e.reason, `${e.code} is the kind ${e.reason}`);
  t.equal(errors.upstreamUnavailable('new_kind').code, 'GW_UPSTREAM_FAILED', 'a kind not listed is "other"');
  t.not(errors.rateLimited(1, 'default').code, errors.rateLimited(1, 'unauthenticated').code);
  t.not(
    errors.notFound().code,
    errors.notFound('path:asset_group_member_id').code,
    'no route vs no resource',
  );
});

t.test('the codes the contract names mean what their names say', async (t) => {
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' });
  const expected: Array<[GatewayError, ErrorCode]> = [
    [errors.notAuthenticated(), 'GW_AUTH_MISSING'],
    [errors.digestMismatch(), 'GW_SIGNATURE_MISMATCH'],
    [errors.clockSkew('behind', '1.00', 'a', 'b'), 'GW_CLOCK_SKEW'],
    [errors.preferInvalid('x'), 'GW_PREFER_INVALID'],
    [errors.rateLimited(1, 'default'), 'GW_RATE_LIMITED'],
    [errors.upstreamUnavailable(kindOf(refused)), 'GW_UPSTREAM_UNREACHABLE'],
    [errors.auditOutcomeLost(), 'GW_AUDIT_OUTCOME_LOST'],
    [errors.internal(), 'GW_INTERNAL'],
  ];
  for (const [error, code] of expected) t.equal(error.code, code);
  t.match(errors.auditOutcomeLost(), { status: 500, message: 'audit outcome not recorded' });
});

t.test("statuses and messages are the contract's literals wherever it writes them", async (t) => {
  const literal: Array<[GatewayError, number, string]> = [
    [errors.notAuthenticated(), 401, 'not authenticated'],
    [errors.notAuthenticated('unknown_certificate'), 401, 'not authenticated'],
    [errors.notAuthenticated('untrusted_certificate'), 401, 'not authenticated'],
    [errors.authTwoComponents(), 400, 'Expected only two components for the Authorization header.'],
    [errors.authUnknownScheme('digest'), 400, 'Unexpected authorization scheme: digest.'],
    [errors.authUnknownScheme('Basic dXNlcjpwYXNz'), 400, 'Unexpected authorization scheme: <not shown>.'],
    [errors.tokenFailed('expired'), 401, 'Token Authorization failed.'],
    [errors.tokenIdMalformed(), 400, 'Token ID is malformed.'],
    [errors.noRequestDate(), 400, `${SIGNED}no request date header`],
    [
      errors.malformedRequestDate('no time zone offset'),
      400,
      `${SIGNED}malformed request date: no time zone offset`,
    ],
    [errors.noSignature(), 400, `${SIGNED}no signature header`],
    [errors.malformedSignature('x'), 400, `${SIGNED}malformed signature header: x`],
    [errors.unknownToken(), 401, `${SIGNED}resource not found`],
    [errors.unknownToken('revoked_token'), 401, `${SIGNED}resource not found`],
    [errors.unknownToken('expired_token'), 401, `${SIGNED}resource not found`],
    [
      errors.clockSkew('behind', '1.50', '2024-01-01T12:00:00Z', '2024-01-01T09:30:00Z'),
      401,
      `${SIGNED}signature too far behind by 1.50 minutes. Server time is 2024-01-01T12:00:00Z. Client time is 2024-01-01T09:30:00Z`,
    ],
    [errors.utcOffset(), 401, `${SIGNED}request date offset exceeds max_utc_offset`],
    [errors.digestMismatch(), 401, `${SIGNED}digest validation failed: signature digest mismatch`],
    [errors.notAuthorized(), 403, 'not authorized'],
    [errors.notFound(), 404, 'resource not found'],
    [errors.notFound('path:sso_provider_id'), 404, 'resource not found'],
    [errors.idMalformed('sso_provider_id'), 400, 'id is malformed'],
    [errors.invalidCollectorType('bloodhound'), 400, 'Invalid collector type: bloodhound'],
    [errors.preferInvalid('wait=soon'), 400, 'Prefer header has an invalid value: wait=soon'],
    [
      errors.preferBypassDisabled(),
      400,
      'Prefer header has an invalid value: failed to bypass limits: feature disabled',
    ],
    [errors.deadline(), 504, 'request timed out'],
    [errors.rateLimited(3, 'default'), 429, 'rate limit exceeded'],
    [errors.rateLimited(3, 'unauthenticated'), 429, 'rate limit exceeded'],
    [errors.rateLimitStoreUnavailable(), 503, 'rate limit store unavailable'],
    [errors.unexpectedPart('colour'), 400, 'unexpected form part "colour"'],
    [errors.duplicatePart('name'), 400, 'expected only one "name" parameter'],
    [
      errors.missingPart('config.auto_provision.enabled'),
      400,
      'form is missing "config.auto_provision.enabled" parameter',
    ],
    [errors.notBool('x'), 400, '"x" parameter could not be converted to bool'],
    [errors.notInt('x'), 400, '"x" parameter could not be converted to int'],
    [
      errors.invalidParameter('config.auto_provision.default_role_id'),
      400,
      '"config.auto_provision.default_role_id" parameter is invalid',
    ],
    [
      errors.metadataNoPostBinding(),
      400,
      'metadata does not have a SSO service that supports HTTP POST binding',
    ],
    [errors.auditOutcomeLost(), 500, 'audit outcome not recorded'],
    [errors.auditUnavailable(), 503, 'audit trail unavailable'],
  ];
  for (const [error, status, message] of literal) {
    t.equal(error.status, status, `${error.code} status`);
    t.equal(error.message, message, `${error.code} message`);
  }
  t.equal(errors.methodNotAllowed('GET, HEAD').status, 405);
  t.same(errors.methodNotAllowed('GET, HEAD').headers, { Allow: 'GET, HEAD' });
  t.equal(errors.movedPermanently('/x').status, 301);
  t.equal(errors.bodyTooLarge(1).status, 413);
  t.equal(errors.partTooLarge('metadata', 1).status, 413);
  t.equal(errors.requestTimeout().status, 408);
  t.equal(errors.headersTooLarge().status, 431);
  t.equal(errors.upstreamUnavailable('connect').status, 502, 'an unreachable upstream is 502');
  t.equal(errors.upstreamTimeout('headers_timeout').status, 504, 'a slow one 504');
  t.same(errors.rateLimited(7, 'default').headers, { 'Retry-After': '7' });
});
