/**
 * Token keys at rest: AES-256-GCM bound to the row's id, subject, permissions and expiry; previous
 * encryption keys still open; a key id reveals nothing of its key.
 */
import t from 'tap';
import { encryptionKeyId, Keyring, newTokenKey, UnsealError } from '../../src/tokens/seal.js';
import { ENCRYPTION_KEYS } from '../helpers/tokens.js';

const [A, B] = ENCRYPTION_KEYS;
const bound = {
  id: '0f0e0d0c-0b0a-4909-8807-060504030201',
  subject: 'svc',
  permissions: ['collectors:read'],
  expiresAt: Date.UTC(2030, 0, 1),
};

t.test('a sealed key opens with its row, and with nothing else', async (t) => {
  const keyring = new Keyring(A);
  const secrets = { key: newTokenKey(), previous: { key: 'old', until: 123 } };
  const sealed = keyring.seal(secrets, bound);
  t.equal(sealed.keyId, encryptionKeyId(Buffer.from(A, 'base64')));
  t.same(keyring.open(sealed, bound), secrets);
  t.same(keyring.open(sealed, { ...bound, id: bound.id.toUpperCase() }), secrets, 'ids compare canonically');
  t.notSame(keyring.seal(secrets, bound).sealed, sealed.sealed, 'a fresh nonce each time');

  const edits = [
    { ...bound, id: '0f0e0d0c-0b0a-4909-8807-060504030202' },
    { ...bound, subject: 'admin' },
    { ...bound, permissions: ['*'] },
    { ...bound, permissions: [] },
    { ...bound, expiresAt: bound.expiresAt + 1 },
    { ...bound, expiresAt: null },
  ];
  for (const edited of edits) {
    t.throws(() => keyring.open(sealed, edited), new UnsealError('tampered'), JSON.stringify(edited));
  }
  const flipped = Buffer.from(sealed.sealed);
  flipped[20] = (flipped[20] as number) ^ 1;
  t.throws(() => keyring.open({ ...sealed, sealed: flipped }, bound), new UnsealError('tampered'));
  t.throws(
    () => keyring.open({ ...sealed, sealed: sealed.sealed.subarray(0, 20) }, bound),
    new UnsealError('malformed'),
  );
  t.throws(() => new Keyring(B).open(sealed, bound), new UnsealError('unknown_key'));
});

t.test('previous encryption keys open what they sealed; new seals use the current key', async (t) => {
  const old = new Keyring(A).seal({ key: 'k' }, bound);
  const rotated = new Keyring(B, [A]);
  t.same(rotated.open(old, bound), { key: 'k' });
  t.ok(rotated.has(old.keyId));
  const fresh = rotated.seal({ key: 'k' }, bound);
  t.equal(fresh.keyId, rotated.currentId);
  t.not(fresh.keyId, old.keyId);
  t.throws(() => new Keyring(A).open(fresh, bound), new UnsealError('unknown_key'));
});

t.test('a key id is a hash prefix: no form of the key appears in it', async (t) => {
  const raw = Buffer.from(A, 'base64');
  const id = encryptionKeyId(raw);
  t.match(id, /^[0-9a-f]{16}$/);
  t.notOk(raw.toString('hex').includes(id) || A.includes(id));
  t.equal(newTokenKey().length, 43);
  t.not(newTokenKey(), newTokenKey());
});
