/**
 * Verifying a signed request (contract §3): the strict parser of `Signature`, the zone and clock
 * checks of `RequestDate`, and the constant-time comparison. The chain itself, the cached request
 * keys and the date format are the signing module's (`src/signing/`).
 */
import { timingSafeEqual } from 'node:crypto';
import { errors } from '../../errors.js';
import { formatRequestDate, type RequestDate } from '../../signing/request-date.js';

/** Bytes of an HMAC-SHA256 digest, the only length a `Signature` may decode to. */
const DIGEST_BYTES = 32;
/** The characters whose low two bits are zero: the last of 43 carrying 256 bits (2 bits unused). */
const CANONICAL_LAST = 'AEIMQUYcgkosw048';
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * The raw bytes of a `Signature` value, or the catalogue's 400 `malformed signature header: <reason>`:
 * strict padded standard base64 (canonical, as an encoder writes it) of exactly 32 bytes.
 */
export function parseSignature(value: string): Buffer {
  // 32 bytes are 44 characters ending in one `=`; canonical when the last character before it has
  // its two unused bits clear (one of `AEIMQUYcgkosw048`), so that re-encoding needs no second pass.
  if (value.length === 44 && BASE64.test(value) && CANONICAL_LAST.includes(value.charAt(42))) {
    if (value.charCodeAt(43) === 61 /* = */) return Buffer.from(value, 'base64');
  }
  if (!BASE64.test(value)) throw errors.malformedSignature('not padded standard base64');
  const bytes = Buffer.from(value, 'base64');
  if (bytes.length !== DIGEST_BYTES) {
    throw errors.malformedSignature(`decodes to ${bytes.length} bytes, expected ${DIGEST_BYTES}`);
  }
  if (bytes.toString('base64') !== value) throw errors.malformedSignature('not canonical base64');
  return bytes;
}

/**
 * Throws the catalogue's 401 when the date's zone is further than `maxOffset` (ms) from UTC: its
 * minutes and zone are not signed, so a wide zone would let a capture look current for hours.
 */
export function checkUtcOffset(date: RequestDate, maxOffset: number): void {
  if (Math.abs(date.offset) * 60_000 > maxOffset) throw errors.utcOffset();
}

/**
 * Throws the catalogue's 401 when the date is more than `maxSkew` (ms) away from `now` (ms), in
 * either direction; the message says by how many minutes beyond the allowed skew. As the reference
 * does, both times are written in the client's zone.
 */
export function checkClockSkew(date: RequestDate, now: number, maxSkew: number): void {
  const drift = date.at - now;
  if (Math.abs(drift) <= maxSkew) return;
  const beyond = ((Math.abs(drift) - maxSkew) / 60_000).toFixed(2);
  throw errors.clockSkew(
    drift < 0 ? 'behind' : 'ahead',
    beyond,
    formatRequestDate(now, date.offset),
    formatRequestDate(date.at, date.offset),
  );
}

/** Constant-time comparison of two signatures (unequal lengths are unequal, never a throw). */
export function signaturesEqual(expected: Buffer, given: Buffer): boolean {
  return expected.length === given.length && timingSafeEqual(expected, given);
}
