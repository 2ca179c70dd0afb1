/**
 * The token registry on a frozen clock: expiry and the end of a rotation's overlap checked on each
 * look-up, the store winning over the YAML list, and a changed token's cached signing keys dropped.
 * The store here is an in-memory `TokenStore` (the PostgreSQL one is tested in test/tokens/).
 */
import t from 'tap';
import { RequestKeys } from '../../src/signing/request-keys.js';
import { createTokenRegistry } from '../../src/tokens/registry.js';
import type { StoreToken, TokenStore } from '../../src/tokens/store.js';

const ID = '0f0e0d0c-0b0a-4909-8807-060504030201';

function memoryStore(initial: StoreToken[]) {
  const held = new Map(initial.map((tok) => [tok.id, tok]));
  const listeners = new Set<(ids: readonly string[]) => void>();
  const touched: string[] = [];
  const store: TokenStore = {
    ready: () => true,
    staleSince: () => undefined,
    tokens: () => held,
    subscribe(l) {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    touch: (id) => touched.push(id),
    matches: () => false,
    retain: () => store,
    close: async () => undefined,
  };
  const put = (tok: StoreToken) => {
    held.set(tok.id, tok);
    for (const l of listeners) l([tok.id]);
  };
  return { store, put, touched, listeners };
}

const token = (over: Partial<StoreToken> = {}): StoreToken => ({
  id: ID,
  name: null,
  subject: 'svc',
  permissions: ['collectors:read'],
  expiresAt: null,
  revoked: false,
  secrets: { key: 'current' },
  unreadable: false,
  ...over,
});

t.test('expiry and the overlap end are checked on each look-up', async (t) => {
  let now = 1_000;
  const { store, touched } = memoryStore([
    token({ expiresAt: 5_000, secrets: { key: 'new', previous: { key: 'old', until: 3_000 } } }),
  ]);
  const registry = createTokenRegistry({ tokens: [], store, now: () => now });
  const keys = () => {
    const found = registry.get(ID);
    return found.ok ? found.keys.map((k) => k.key.toString()) : found.reason;
  };
  t.same(keys(), ['new', 'old']);
  now = 3_000;
  t.same(keys(), ['new'], 'the overlap is over');
  now = 5_000;
  t.equal(keys(), 'expired_token');
  t.equal(registry.get('00000000-0000-4000-8000-000000000000').ok, false);
  now = 1_000;
  const found = registry.get(ID);
  if (found.ok) found.used();
  t.same(touched, [ID], 'a verified use goes to the store');
});

t.test('the store wins over the YAML list, revoked and unreadable rows included', async (t) => {
  const yaml = [{ id: ID.toUpperCase(), key: 'yaml', subject: 'yaml', permissions: [] as never[] }];
  const { store, put } = memoryStore([]);
  const warnings: unknown[] = [];
  const logger = { warn: (o: unknown) => warnings.push(o) } as never;
  const registry = createTokenRegistry({ tokens: yaml, store, logger });
  const subject = () => {
    const found = registry.get(ID);
    return found.ok ? found.identity.subject : found.reason;
  };
  t.equal(subject(), 'yaml');
  put(token());
  t.equal(subject(), 'svc');
  t.same(warnings, [{ path: 'auth.signature.tokens[0]', token_id: ID }]);
  put(token({ revoked: true, secrets: undefined }));
  t.equal(subject(), 'revoked_token');
  put(token({ unreadable: true, secrets: undefined }));
  t.equal(subject(), 'unknown_token', 'an unreadable row refuses rather than fall back to YAML');
  t.equal(warnings.length, 1, 'warned once');
});

t.test("a changed token's cached signing keys are dropped", async (t) => {
  const { store, put, listeners } = memoryStore([token({ secrets: { key: 'first' } })]);
  const registry = createTokenRegistry({ tokens: [], store });
  const cache = new RequestKeys();
  registry.onDrop((id) => cache.forget(id));
  const sign = (key: string) => {
    const found = registry.get(ID);
    if (!found.ok) throw new Error(found.reason);
    const k = found.keys[0]!;
    return cache.open(k.cacheId, Buffer.from(key), 'GET', '/x', '2024-01-01T10:00:00Z').digest();
  };
  const first = sign('first');
  t.same(sign('ignored'), first, 'a cached entry is served from the cache');
  put(token({ secrets: { key: 'second' } }));
  t.notSame(sign('second'), first, 'a rotated key is derived afresh');

  // forget() drops the entries of one id only, whatever suffix they were opened with.
  const other = '11111111-1111-4111-8111-111111111111';
  const direct = new RequestKeys();
  const open = (id: string, key: string) =>
    direct.open(id, Buffer.from(key), 'GET', '/x', '2024-01-01T10').digest();
  const kept = open(`${other}:1`, 'a');
  open(`${ID}:1`, 'a');
  open(ID, 'a');
  direct.forget(ID);
  t.notSame(open(`${ID}:1`, 'b'), open(`${other}:1`, 'b'), 'dropped');
  t.notSame(open(ID, 'b'), kept);
  t.same(open(`${other}:1`, 'b'), kept, 'another token is kept');
  registry.close();
  t.equal(listeners.size, 0, 'closing stops following the store');
});
