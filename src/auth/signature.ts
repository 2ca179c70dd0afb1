/**
 * The signed-request scheme of the reference service (contract §3): the HMAC chain, the strict
 * parsers of `RequestDate` and `Signature`, the clock-skew check and the constant-time comparison.
 *
 * Signature = base64(HMAC3), HMAC1 = HMAC-SHA256(token key, method + raw target), HMAC2 =
 * HMAC-SHA256(HMAC1, first 13 characters of RequestDate as sent), HMAC3 = HMAC-SHA256(HMAC2, body).
 */
import { createHmac, type Hmac, timingSafeEqual } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { errors } from '../errors.js';

/** Length of the date prefix the chain binds: `YYYY-MM-DDTHH`, the hour. */
const DATE_PREFIX = 13;
/** Bytes of an HMAC-SHA256 digest, the only length a `Signature` may decode to. */
const DIGEST_BYTES = 32;

/**
 * Hashes a signed request as its body arrives: the method, target and date are bound at
 * construction, then every body chunk goes to `update`, and `digest` gives the expected signature.
 */
export class SignatureDigest {
  readonly #hmac: Hmac;

  constructor(key: string | Buffer, method: string, target: string, requestDate: string) {
    this.#hmac = createHmac('sha256', requestKey(key, method, target, requestDate));
  }

  /** Adds body bytes, in the order they were received. */
  update(chunk: Buffer): this {
    this.#hmac.update(chunk);
    return this;
  }

  /** The raw 32-byte signature; call once, after the whole body. */
  digest(): Buffer {
    return this.#hmac.digest();
  }
}

/** HMAC2 of the chain: the key the body is hashed with, bound to the method, target and hour. */
function requestKey(key: string | Buffer, method: string, target: string, requestDate: string): Buffer {
  const first = createHmac('sha256', key)
    .update(method + target)
    .digest();
  return createHmac('sha256', first).update(requestDate.slice(0, DATE_PREFIX)).digest();
}

/** Targets longer than this are not kept by `RequestKeys` (an entry's size stays small). */
const CACHED_TARGET = 512;

/**
 * The chain's per-request keys, kept for requests that repeat (a client polling one resource signs
 * the same method, target and hour again and again): a hit skips two of the three HMACs, and for a
 * request without a body all three. Entries are derived from the token key and what the client
 * sent, so a hit gives exactly what computing would; bounded by count and target length.
 */
export class RequestKeys {
  readonly #cache: LRUCache<string, { key: Buffer; empty?: Buffer }>;

  constructor(max = 4096) {
    this.#cache = new LRUCache({ max });
  }

  /**
   * A hasher for one request of token `tokenId` (whose secret is `key`): `update` with each body
   * chunk, then `digest` for the expected signature.
   */
  open(
    tokenId: string,
    key: string | Buffer,
    method: string,
    target: string,
    requestDate: string,
  ): { update(chunk: Buffer): void; digest(): Buffer } {
    const id = `${tokenId} ${requestDate.slice(0, DATE_PREFIX)} ${method} ${target}`;
    let entry = target.length <= CACHED_TARGET ? this.#cache.get(id) : undefined;
    if (entry === undefined) {
      entry = { key: requestKey(key, method, target, requestDate) };
      if (target.length <= CACHED_TARGET) this.#cache.set(id, entry);
    }
    const found = entry;
    let hmac: Hmac | undefined;
    return {
      update(chunk) {
        if (chunk.length > 0) (hmac ??= createHmac('sha256', found.key)).update(chunk);
      },
      digest() {
        if (hmac !== undefined) return hmac.digest();
        return (found.empty ??= createHmac('sha256', found.key).digest());
      },
    };
  }
}

/**
 * The `Signature` header value (base64) for a request; `requestDate` is the header value as sent.
 * Used by the `sign` command and by tests to sign requests the way clients do.
 */
export function computeSignature(
  key: string,
  method: string,
  target: string,
  requestDate: string,
  body?: Buffer,
): string {
  const digest = new SignatureDigest(key, method, target, requestDate);
  if (body !== undefined && body.length > 0) digest.update(body);
  return digest.digest().toString('base64');
}

/**
 * The token id forms the reference's UUID parser reads: canonical, 32 hex digits, either of them in
 * braces or after `urn:uuid:`. Group 1 or 2 holds the hex digits.
 */
const UUID =
  /^(?:urn:uuid:|\{(?=.*\}$))?(?:([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})|([0-9a-f]{32}))\}?$/i;

/** The canonical lower-case form of a token id, or undefined when it is not a UUID. */
export function canonicalTokenId(value: string): string | undefined {
  const m = UUID.exec(value);
  if (!m || (value.endsWith('}') && !value.startsWith('{'))) return undefined;
  const hex = (m[1] ?? (m[2] as string)).replace(/-/g, '').toLowerCase();
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

// RFC 3339 §5.6 date-time; `T` and `Z` may be lower case (its note), the zone is required.
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const NO_ZONE = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?$/;

/**
 * The instant (ms since the epoch) of a `RequestDate` value, or the catalogue's 400 `malformed
 * request date: <reason>`. Strict RFC 3339 with a zone: every field is range-checked, because
 * `Date.parse` accepts values without a zone and rolls Feb 30 into March.
 */
export function parseRequestDate(value: string): number {
  const m = DATE_TIME.exec(value);
  if (!m) {
    if (DATE_ONLY.test(value)) throw errors.malformedRequestDate('a date without a time and zone');
    if (NO_ZONE.test(value)) throw errors.malformedRequestDate('no time zone offset');
    throw errors.malformedRequestDate('not an RFC 3339 date-time');
  }
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (month < 1 || month > 12) throw errors.malformedRequestDate('month out of range');
  if (day < 1 || day > daysInMonth(year, month)) throw errors.malformedRequestDate('day out of range');
  if (hour > 23) throw errors.malformedRequestDate('hour out of range');
  if (minute > 59) throw errors.malformedRequestDate('minute out of range');
  if (second > 59) throw errors.malformedRequestDate('second out of range');
  let offset = 0;
  if (m[8] === undefined) {
    const zoneHours = Number(m[10]);
    const zoneMinutes = Number(m[11]);
    if (zoneHours > 23 || zoneMinutes > 59) throw errors.malformedRequestDate('zone offset out of range');
    offset = (m[9] === '-' ? -1 : 1) * (zoneHours * 60 + zoneMinutes) * 60_000;
  }
  const fraction = m[7] === undefined ? 0 : Number(`0.${m[7]}`) * 1000;
  const date = new Date(Date.UTC(2000, month - 1, day, hour, minute, second));
  date.setUTCFullYear(year); // Date.UTC maps years 0–99 to 1900–1999
  return date.getTime() + Math.floor(fraction) - offset;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * The raw bytes of a `Signature` value, or the catalogue's 400 `malformed signature header: <reason>`:
 * strict padded standard base64 (canonical, as an encoder writes it) of exactly 32 bytes.
 */
export function parseSignature(value: string): Buffer {
  if (!BASE64.test(value)) throw errors.malformedSignature('not padded standard base64');
  const bytes = Buffer.from(value, 'base64');
  if (bytes.length !== DIGEST_BYTES) {
    throw errors.malformedSignature(`decodes to ${bytes.length} bytes, expected ${DIGEST_BYTES}`);
  }
  if (bytes.toString('base64') !== value) throw errors.malformedSignature('not canonical base64');
  return bytes;
}

/** The zone offset, in minutes east of UTC, of a `RequestDate` that `parseRequestDate` accepted. */
export function requestDateOffset(value: string): number {
  const m = /([+-])(\d{2}):(\d{2})$/.exec(value);
  return m ? (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) : 0;
}

/**
 * Throws the catalogue's 401 when `client` (ms) is more than `maxSkew` (ms) away from `now` (ms), in
 * either direction; the message says by how many minutes beyond the allowed skew. As the reference
 * does, both times are written in the client's zone (`offset`, minutes east of UTC).
 */
export function checkClockSkew(client: number, now: number, maxSkew: number, offset = 0): void {
  const drift = client - now;
  if (Math.abs(drift) <= maxSkew) return;
  const beyond = ((Math.abs(drift) - maxSkew) / 60_000).toFixed(2);
  throw errors.clockSkew(
    drift < 0 ? 'behind' : 'ahead',
    beyond,
    rfc3339(now, offset),
    rfc3339(client, offset),
  );
}

/**
 * An instant as RFC 3339 with second precision (truncated), in the zone `offset` minutes east of UTC:
 * `2024-01-01T10:15:00Z`, `2024-01-01T12:15:00+02:00`.
 */
export function rfc3339(ms: number, offset = 0): string {
  const local = new Date(Math.floor(ms / 1000) * 1000 + offset * 60_000).toISOString().slice(0, 19);
  if (offset === 0) return `${local}Z`;
  const abs = Math.abs(offset);
  const zone = `${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
  return `${local}${offset < 0 ? '-' : '+'}${zone}`;
}

/** Constant-time comparison of two signatures (unequal lengths are unequal, never a throw). */
export function signaturesEqual(expected: Buffer, given: Buffer): boolean {
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/**
 * The chain's three digests for one request, step by step (what `gateway verify` prints): HMAC1 over
 * method + target, HMAC2 over the hour, HMAC3 (the signature) over the body.
 */
export function signatureSteps(
  key: string | Buffer,
  method: string,
  target: string,
  requestDate: string,
  body: Buffer = Buffer.alloc(0),
): [Buffer, Buffer, Buffer] {
  const first = createHmac('sha256', key)
    .update(method + target)
    .digest();
  const second = createHmac('sha256', first).update(requestDate.slice(0, DATE_PREFIX)).digest();
  return [first, second, createHmac('sha256', second).update(body).digest()];
}
