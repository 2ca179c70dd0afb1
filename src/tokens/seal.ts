/**
 * Token keys at rest (contract §9): AES-256-GCM under the configured `encryption_key`, a fresh
 * 96-bit nonce per seal, and associated data binding the row's id, subject, permissions and expiry,
 * so that a row whose fields were edited in the database no longer opens. The key id stored beside
 * each sealed key says which encryption key sealed it; `previous_encryption_keys` still open rows
 * sealed before a rotation of that key.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/** What is sealed: a token's key and, during a rotation's overlap, the key it replaced. */
export interface TokenSecrets {
  readonly key: string;
  /** The replaced key, which verifies until `until` (ms since the epoch). */
  readonly previous?: { readonly key: string; readonly until: number };
}

/** The row's fields the seal binds. */
export interface BoundFields {
  readonly id: string;
  readonly subject: string;
  readonly permissions: readonly string[];
  /** ms since the epoch, or null for a token that does not expire. */
  readonly expiresAt: number | null;
}

/** A sealed key as stored: which encryption key sealed it, and the bytes. */
export interface Sealed {
  readonly keyId: string;
  readonly sealed: Buffer;
}

/** A row that does not open: unknown encryption key, or bytes or bound fields not as sealed. */
export class UnsealError extends Error {
  constructor(readonly why: 'unknown_key' | 'malformed' | 'tampered') {
    super(`the sealed key does not open (${why})`);
    this.name = 'UnsealError';
  }
}

const FORMAT = 1;
const NONCE = 12;
const TAG = 16;

/** The public name of an encryption key: a hash prefix, from which nothing of the key follows. */
export function encryptionKeyId(key: Buffer): string {
  return createHash('sha256')
    .update('bh-gateway token encryption key\0')
    .update(key)
    .digest('hex')
    .slice(0, 16);
}

function associatedData(bound: BoundFields): Buffer {
  return Buffer.from(
    JSON.stringify([
      'bh-gateway token',
      FORMAT,
      bound.id.toLowerCase(),
      bound.subject,
      bound.permissions,
      bound.expiresAt,
    ]),
  );
}

/** The current encryption key and the previous ones, by key id. */
export class Keyring {
  /** The id of the key new seals use. */
  readonly currentId: string;
  readonly #keys = new Map<string, Buffer>();

  /** `current` and `previous` in standard base64, 32 bytes each (the configuration checks them). */
  constructor(current: string, previous: readonly string[] = []) {
    const keys = [current, ...previous].map((k) => Buffer.from(k, 'base64'));
    for (const key of keys) this.#keys.set(encryptionKeyId(key), key);
    this.currentId = encryptionKeyId(keys[0] as Buffer);
  }

  /** True when a row sealed under `keyId` opens with this keyring. */
  has(keyId: string): boolean {
    return this.#keys.has(keyId);
  }

  /** Seals `secrets` for the row `bound` under the current key. */
  seal(secrets: TokenSecrets, bound: BoundFields): Sealed {
    const nonce = randomBytes(NONCE);
    const cipher = createCipheriv('aes-256-gcm', this.#keys.get(this.currentId) as Buffer, nonce);
    cipher.setAAD(associatedData(bound));
    const plain = Buffer.from(
      JSON.stringify({
        k: secrets.key,
        ...(secrets.previous && { p: { k: secrets.previous.key, u: secrets.previous.until } }),
      }),
    );
    const body = Buffer.concat([cipher.update(plain), cipher.final()]);
    plain.fill(0);
    return {
      keyId: this.currentId,
      sealed: Buffer.concat([Buffer.of(FORMAT), nonce, body, cipher.getAuthTag()]),
    };
  }

  /** The secrets of a row, or an `UnsealError`. */
  open(sealed: Sealed, bound: BoundFields): TokenSecrets {
    const key = this.#keys.get(sealed.keyId);
    if (key === undefined) throw new UnsealError('unknown_key');
    const bytes = sealed.sealed;
    if (bytes.length < 1 + NONCE + TAG + 1 || bytes[0] !== FORMAT) throw new UnsealError('malformed');
    const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(1, 1 + NONCE));
    decipher.setAAD(associatedData(bound));
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG));
    let plain: Buffer;
    try {
      plain = Buffer.concat([
        decipher.update(bytes.subarray(1 + NONCE, bytes.length - TAG)),
        decipher.final(),
      ]);
    } catch {
      throw new UnsealError('tampered');
    }
    const parsed = JSON.parse(plain.toString('utf8')) as { k: string; p?: { k: string; u: number } };
    plain.fill(0);
    const { k, p } = parsed;
    return p === undefined ? { key: k } : { key: k, previous: { key: p.k, until: p.u } };
  }
}

/** A new token key: 32 random bytes, base64url (43 characters), used as the HMAC key's UTF-8 text. */
export function newTokenKey(): string {
  return randomBytes(32).toString('base64url');
}
