/**
 * An entry as the contract defines it: the hash chain over the canonical JSON (checked against a
 * hash computed here from the definition's words), `created_at` with three fraction digits and never
 * before the head's, strings every store keeps alike, and the `fields` an update and a refusal have.
 */
import { createHash } from 'node:crypto';
import t from 'tap';
import { canonicalJson, entryHash, GENESIS_HASH, sealEntry } from '../../src/audit/entry.js';
import {
  auditedChanges,
  cutUtf8,
  metadataSha256,
  refusalFields,
  requestedChanges,
  updateFields,
} from '../../src/audit/fields.js';
import { newEntry } from './helpers.js';

const sha256 = (text: string) => createHash('sha256').update(Buffer.from(text, 'utf8')).digest('hex');

t.test('canonical JSON sorts keys at every level and has no whitespace', async (t) => {
  const value = { b: 1, a: { d: [{ z: true, y: null }], c: 'é' } };
  t.equal(canonicalJson(value), '{"a":{"c":"é","d":[{"y":null,"z":true}]},"b":1}');
});

t.test('the first entry chains from 64 zeros; each next one from the previous hash', async (t) => {
  const sealed = sealEntry(undefined, newEntry({ status: 'intent' }), Date.parse('2026-11-27T18:13:33.123Z'));
  const first = sealed.entry;
  t.equal(first.id, 1);
  t.equal(first.created_at, '2026-11-27T18:13:33.123Z');
  const { hash, ...rest } = first;
  // The definition, spelled out: the keys in order, the fields' keys in order, no whitespace.
  const canonical =
    `{"action":"UpdateSSOIdentityProvider","actor_email":"alice@example.com",` +
    `"actor_id":"c0ffee00-0000-4000-8000-000000000001","actor_name":"alice",` +
    `"commit_id":"0d15ea5e-0000-4000-8000-000000000001","created_at":"2026-11-27T18:13:33.123Z",` +
    `"fields":{"changed":["name","display_name"],"id":11,"name":"okta","sso_provider_id":1},"id":1,` +
    `"request_id":"5a1e0000-0000-4000-8000-000000000001","source_ip_address":"192.0.2.10","status":"intent"}`;
  t.equal(canonicalJson(rest), canonical);
  t.equal(sealed.canonical, canonical, 'the text written key by key is the canonical JSON');
  t.same(sealed.head, { id: 1, hash, time: Date.parse('2026-11-27T18:13:33.123Z') });
  t.equal(hash, sha256(`${'0'.repeat(64)}${canonical}`));
  t.match(hash, /^[0-9a-f]{64}$/);

  const head = { id: first.id, hash: first.hash, time: Date.parse(first.created_at) };
  const second = sealEntry(head, newEntry({ status: 'success' }), Date.parse('2026-11-27T18:13:34Z')).entry;
  t.equal(second.id, 2);
  t.equal(second.created_at, '2026-11-27T18:13:34.000Z', 'always three fraction digits');
  const { hash: secondHash, ...secondRest } = second;
  t.equal(secondHash, sha256(first.hash + canonicalJson(secondRest)));
  t.equal(entryHash(GENESIS_HASH, rest), hash);
});

t.test('created_at never goes before the head: a clock behind the last writer takes its time', async (t) => {
  const head = { id: 7, hash: 'a'.repeat(64), time: Date.parse('2026-11-27T18:13:33.500Z') };
  const entry = sealEntry(head, newEntry(), Date.parse('2026-11-27T18:13:33.100Z')).entry;
  t.equal(entry.id, 8);
  t.equal(entry.created_at, '2026-11-27T18:13:33.500Z');
});

t.test('strings every store keeps alike: a NUL or a lone surrogate becomes U+FFFD', async (t) => {
  const sealed = sealEntry(
    undefined,
    newEntry({ actor_name: 'a\u0000b\ud800c', fields: { e: 'x\udc00' } }),
    0,
  );
  const { entry } = sealed;
  t.equal(entry.actor_name, 'a\uFFFDb\uFFFDc');
  t.same(entry.fields, { e: 'x\uFFFD' });
  const { hash: _hash, ...rest } = entry;
  t.equal(sealed.canonical, canonicalJson(rest), 'the canonical text is of the cleaned entry');
  for (const odd of ['back\\u0000slash', 'é😀', '"quoted"\n', '\udfff\ud800']) {
    const e = sealEntry(
      undefined,
      newEntry({ actor_email: odd, fields: { [odd]: [odd, { b: 1, a: odd }] } }),
      0,
    );
    const { hash: _h, ...r } = e.entry;
    t.equal(e.canonical, canonicalJson(r), `key by key equals the generic form: ${JSON.stringify(odd)}`);
  }
  t.equal(sealEntry(undefined, newEntry({ actor_name: '😀' }), 0).entry.actor_name, '😀', 'pairs are kept');
});

t.test(
  'the fields of an update: provider, changed as the audit spells it, the metadata digest',
  async (t) => {
    t.same(requestedChanges({ name: true, metadata: true, autoProvision: true }), [
      'name',
      'display_name',
      'idp_issuer_uri',
      'idp_sso_uri',
      'metadata_xml',
      'config.auto_provision',
    ]);
    t.same(requestedChanges({}), []);
    t.same(
      auditedChanges([
        'name',
        'config.auto_provision.enabled',
        'config.auto_provision.default_role_id',
        'metadata_xml',
      ]),
      ['name', 'config.auto_provision', 'metadata_xml'],
    );
    const file = Buffer.from('<EntityDescriptor entityID="https://idp.example.com"/>');
    const digest = metadataSha256(file);
    t.equal(digest, createHash('sha256').update(file).digest('hex'));
    t.same(
      updateFields({
        ssoProviderId: 4,
        provider: { id: 9, name: 'okta' },
        changed: ['metadata_xml'],
        metadataSha256: digest,
      }),
      { sso_provider_id: 4, id: 9, name: 'okta', changed: ['metadata_xml'], metadata_sha256: digest },
    );
    const failed = updateFields({
      ssoProviderId: 4,
      provider: { id: 9, name: 'okta' },
      changed: [],
      error: 'store unavailable',
    });
    t.equal(failed.error, 'store unavailable');
    t.notOk('metadata_sha256' in failed, 'no digest without a file');
  },
);

t.test(
  'the fields of a refusal: method, the path without its query (at most 256 bytes), permission',
  async (t) => {
    t.same(
      refusalFields({ method: 'GET', path: '/api/v2/audit?token=secret&x=1', permission: 'audit:read' }),
      {
        method: 'GET',
        path: '/api/v2/audit',
        permission: 'audit:read',
      },
    );
    const long = `/api/v2/x${'é'.repeat(200)}`; // 9 bytes, then two-byte characters
    const cut = refusalFields({ method: 'PATCH', path: long, permission: 'sso_providers:write' })
      .path as string;
    t.ok(Buffer.byteLength(cut) <= 256, 'at most 256 bytes');
    t.ok(long.startsWith(cut), 'a prefix, cut between characters');
    t.equal(Buffer.byteLength(cut), 256 - 1, 'the last two-byte character that fits');
    t.equal(cutUtf8('abc', 2), 'ab');
    t.equal(cutUtf8('a😀', 4), 'a', 'a four-byte character is never split');
  },
);
