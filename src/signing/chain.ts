/**
 * The signed-request scheme's HMAC chain (contract §3), the one implementation that verification,
 * outgoing requests, `gateway sign` and `gateway verify` share:
 *
 * Signature = base64(HMAC3), HMAC1 = HMAC-SHA256(token key, method + raw target), HMAC2 =
 * HMAC-SHA256(HMAC1, first 13 characters of RequestDate as sent), HMAC3 = HMAC-SHA256(HMAC2, body).
 */
import { createHmac } from 'node:crypto';

/** Characters of `RequestDate` the chain binds: `YYYY-MM-DDTHH`, the date and hour as written. */
export const SIGNED_DATE_LENGTH = 13;

/** HMAC1 of the chain: the key bound to the method and the raw target. */
export function targetKey(key: string | Buffer, method: string, target: string): Buffer {
  return createHmac('sha256', key)
    .update(method + target)
    .digest();
}

/** HMAC2 of the chain: the key the body is hashed with, bound to the method, target and hour. */
export function requestKey(
  key: string | Buffer,
  method: string,
  target: string,
  requestDate: string,
): Buffer {
  return hourKey(targetKey(key, method, target), requestDate);
}

/** HMAC2 from HMAC1: the key bound to the hour of `requestDate` as written. */
export function hourKey(first: Buffer, requestDate: string): Buffer {
  return createHmac('sha256', first).update(requestDate.slice(0, SIGNED_DATE_LENGTH)).digest();
}

/** HMAC3: the raw 32-byte signature of `body` under the request key. */
export function bodySignature(requestKeyBytes: Buffer, body?: Buffer): Buffer {
  const hmac = createHmac('sha256', requestKeyBytes);
  if (body !== undefined && body.length > 0) hmac.update(body);
  return hmac.digest();
}

/** The `Signature` header value (base64) for a request; `requestDate` is the header value as sent. */
export function signatureOf(
  key: string | Buffer,
  method: string,
  target: string,
  requestDate: string,
  body?: Buffer,
): string {
  return bodySignature(requestKey(key, method, target, requestDate), body).toString('base64');
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
  const first = targetKey(key, method, target);
  const second = hourKey(first, requestDate);
  return [first, second, bodySignature(second, body)];
}
