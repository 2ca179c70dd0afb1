import { generateKeyPairSync } from 'node:crypto';
import type { JWK } from 'jose';
import t from 'tap';
import { ASYMMETRIC_ALGORITHMS, InvalidKeySet, lookUp, readKeySet } from '../../src/auth/jwk-set.js';
import { testKey } from '../helpers/jwks.js';

const ALL = new Set(ASYMMETRIC_ALGORITHMS);
const set = (keys: unknown[]) => JSON.stringify({ keys });
const algsOf = async (keys: unknown[], allowed: ReadonlySet<string> = ALL) =>
  (await readKeySet(set(keys), allowed)).map((k) => [k.kid, [...k.byAlg.keys()].sort()]);

t.test(
  'each key verifies the algorithms its type allows, narrowed by its alg and the allow-list',
  async (t) => {
    const rsa = (await testKey('RS256', 'rsa', { bare: true })).jwk;
    const p256 = (await testKey('ES256', 'p256', { bare: true })).jwk;
    const p384 = (await testKey('ES384', 'p384')).jwk;
    const p521 = (await testKey('ES512', 'p521')).jwk;
    const ed = (await testKey('EdDSA', 'ed', { bare: true })).jwk;
    t.same(await algsOf([rsa, p256, p384, p521, ed]), [
      ['rsa', ['PS256', 'PS384', 'PS512', 'RS256', 'RS384', 'RS512']],
      ['p256', ['ES256']],
      ['p384', ['ES384']],
      ['p521', ['ES512']],
      ['ed', ['Ed25519', 'EdDSA']],
    ]);
    t.same(await algsOf([{ ...rsa, alg: 'PS384' }]), [['rsa', ['PS384']]], 'the key names its algorithm');
    t.same(await algsOf([rsa, p256], new Set(['ES256'])), [['p256', ['ES256']]], 'the allow-list');
    t.same(
      await algsOf([
        { ...p256, key_ops: ['verify'] },
        { ...rsa, use: 'sig' },
      ]).then((k) => k.length),
      2,
    );
  },
);

t.test('keys the gateway must never verify with are left out', async (t) => {
  const rsa = (await testKey('RS256', 'rsa')).jwk;
  const ec = (await testKey('ES256', 'ec')).jwk;
  const short = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ format: 'jwk' });
  const left: unknown[] = [
    { ...rsa, kid: 'private', d: 'AQAB' },
    { kty: 'oct', k: 'c2VjcmV0', kid: 'symmetric' },
    { ...ec, kid: 'enc', use: 'enc' },
    { ...ec, kid: 'sign-only', key_ops: ['sign'] },
    { ...ec, kid: 'ops-not-a-list', key_ops: 'verify' },
    { ...ec, kid: 7 },
    { ...ec, kid: 'hmac-alg', alg: 'HS256' },
    { ...ec, kid: 'other-curve', crv: 'P-384' },
    { ...ec, kid: 'unknown-curve', crv: 'P-192' },
    { kty: 'OKP', crv: 'X25519', x: ec.x, kid: 'ecdh' },
    { ...short, kid: 'rsa-1024' },
    { kty: 'RSA', n: 'AQAB', e: 'AQAB', kid: 'broken' },
    { kty: 'AKP', kid: 'post-quantum' },
    'a string',
    null,
    [rsa],
  ];
  t.same(await algsOf([...left, ec]), [['ec', ['ES256']]]);
  const err = await readKeySet(set(left), ALL).catch((e: unknown) => e);
  t.type(err, InvalidKeySet);
  t.match(err, { message: 'no usable key' });
});

t.test('a document that is no key set is refused', async (t) => {
  const ec = (await testKey('ES256', 'ec')).jwk;
  for (const [text, why] of [
    ['', 'not JSON'],
    ['{"keys": {}}', 'no "keys" array'],
    ['null', 'no "keys" array'],
    [set(Array.from({ length: 101 }, () => ec)), 'more than 100 keys'],
    [set([]), 'no usable key'],
  ] as const) {
    await t.rejects(readKeySet(text, ALL), { message: why }, why);
  }
  t.equal((await readKeySet(set(Array.from({ length: 100 }, () => ec)), ALL)).length, 100, '100 is fine');
});

t.test('a lookup finds one key, or says why not', async (t) => {
  const keys = await readKeySet(
    set([
      (await testKey('RS256', 'a')).jwk,
      (await testKey('ES256', 'b')).jwk,
      (await testKey('ES256', 'c', { n: 1 })).jwk,
    ] as JWK[]),
    ALL,
  );
  t.match(lookUp(keys, 'RS256', 'a'), { fingerprint: /"a"/ });
  t.match(lookUp(keys, 'RS256', undefined), { fingerprint: /"a"/ }, 'no kid: the one key that fits');
  t.equal(lookUp(keys, 'ES256', undefined), 'ambiguous_key');
  t.equal(lookUp(keys, 'ES256', 'a'), 'bad_algorithm');
  t.equal(lookUp(keys, 'ES256', 'z'), 'unknown');
  t.equal(lookUp(keys, 'PS384', undefined), 'unknown');
  t.equal(lookUp(keys, 'EdDSA', undefined), 'unknown');
  const first = lookUp(keys, 'ES256', 'b');
  const second = lookUp(keys, 'ES256', 'c');
  t.not(
    typeof first === 'string' ? first : first.fingerprint,
    typeof second === 'string' ? 0 : second.fingerprint,
  );
});
