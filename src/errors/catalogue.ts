/**
 * The catalogue's codes, gathered from their families: what `GatewayError` takes its status from,
 * what the tests walk, and what `npm run docs:gen` writes as `docs/reference/error-codes.md`.
 */
import { AUDIT, AUDIT_QUERY } from './audit.js';
import { AUTHENTICATION, BEARER, SIGNATURE } from './authentication.js';
import type { CodeEntry, CodeFamily, LabelOf } from './entry.js';
import { FORM, METADATA, PATH } from './input.js';
import { DEADLINE, RATE_LIMIT, REQUEST, SERVER } from './requests.js';
import { UPSTREAM_BAD_ANSWER, UPSTREAM_TIMEOUT, UPSTREAM_UNAVAILABLE } from './upstream.js';

const ALL = {
  ...REQUEST,
  ...DEADLINE,
  ...AUTHENTICATION,
  ...SIGNATURE,
  ...BEARER,
  ...RATE_LIMIT,
  ...PATH,
  ...FORM,
  ...METADATA,
  ...UPSTREAM_UNAVAILABLE,
  ...UPSTREAM_TIMEOUT,
  ...UPSTREAM_BAD_ANSWER,
  ...SERVER,
  ...AUDIT,
  ...AUDIT_QUERY,
} as const;

/** A stable error code: `GW_` and upper-case words joined by `_`. */
export type ErrorCode = keyof typeof ALL;

/** Every code of the catalogue, with what the generated table says of it. */
export const CODES: Readonly<Record<ErrorCode, CodeEntry>> = ALL;

/** The families of codes, titled, in the order the generated table lists them. */
export const CODE_FAMILIES: ReadonlyArray<readonly [title: string, codes: CodeFamily]> = [
  ['Requests and routing', REQUEST],
  ['Deadline', DEADLINE],
  ['Authentication and permission', AUTHENTICATION],
  ['Signed requests', SIGNATURE],
  ['Bearer tokens', BEARER],
  ['Rate limits', RATE_LIMIT],
  ['Path parameters', PATH],
  ['SSO provider form', FORM],
  ['SAML metadata', METADATA],
  ['Upstream unreachable', UPSTREAM_UNAVAILABLE],
  ['Upstream too slow', UPSTREAM_TIMEOUT],
  ['Upstream answers that cannot be used', UPSTREAM_BAD_ANSWER],
  ['The gateway itself', SERVER],
  ['Audit trail', AUDIT],
  ['Audit trail queries', AUDIT_QUERY],
];

/** The code of each label of `family`: how a factory given a reason finds its code. */
function byLabel(family: CodeFamily): (label: string) => ErrorCode | undefined {
  const codes = new Map<string, ErrorCode>();
  for (const [code, entry] of Object.entries(family)) {
    if (entry.label !== undefined) codes.set(entry.label, code as ErrorCode);
  }
  return (label) => codes.get(label);
}

/** Like `byLabel`, for a reason whose type says it is one of the family's labels. */
function ofLabel<F extends CodeFamily>(family: F): (label: LabelOf<F>) => ErrorCode {
  const find = byLabel(family);
  return (label) => find(label) as ErrorCode;
}

/** A reason a bearer token is refused. */
export type BearerReason = LabelOf<typeof BEARER>;
/** An upstream that was reached too slowly. */
export type UpstreamTimeoutKind = LabelOf<typeof UPSTREAM_TIMEOUT>;
/** An upstream answer that cannot be used. */
export type UpstreamAnswerKind = LabelOf<typeof UPSTREAM_BAD_ANSWER>;

/** The codes of the reasons the catalogue's factories are given, by family. */
export const codeOf = {
  authentication: ofLabel(AUTHENTICATION),
  signature: ofLabel(SIGNATURE),
  bearer: ofLabel(BEARER),
  /** `undefined` for a kind the family does not list. */
  unavailable: byLabel(UPSTREAM_UNAVAILABLE),
  timeout: ofLabel(UPSTREAM_TIMEOUT),
  badAnswer: ofLabel(UPSTREAM_BAD_ANSWER),
};
