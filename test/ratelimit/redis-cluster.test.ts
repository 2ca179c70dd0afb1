/**
 * The redis store on a real three-node Redis Cluster started by the test: limits exact for
 * identities whose keys live on different nodes (a request counted by two policies included, both
 * keys in one slot), and a slot moved between nodes while counting (ASK during the move, MOVED
 * after it) without a decision lost or an error; a node lost costs its identities' decisions only,
 * each bounded by the timeout.
 */
import { hash, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import t from 'tap';
import { call, startGateway, TOKENS, type TestGateway, type Tok } from '../helpers/gateway.js';
import { scrape } from '../helpers/metrics.js';
import { requireRedisServer } from '../helpers/redis.js';
import { startRedisCluster, type RedisClusterNodes } from '../helpers/redis-topologies.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';
const CHECKSUM = '/api/v2/collectors/sharphound/latest/checksum';

t.setTimeout(180_000);

type Node = RedisClusterNodes['nodes'][number];

/** The key of `token`'s default policy, as the gateway names it. */
const keyOf = (token: Tok, rule: string) =>
  `gateway:rl:{${hash('sha256', `token:${token.id}`, 'base64url')}}:${rule}`;

/** Which node serves each slot now. */
async function slotOwners(cluster: RedisClusterNodes): Promise<(slot: number) => Node> {
  const ranges = (await cluster.nodes[0]?.client.call('CLUSTER', 'SLOTS')) as Array<
    [number, number, [string, number, string]]
  >;
  return (slot) => {
    const range = ranges.find(([from, to]) => slot >= from && slot <= to);
    return cluster.nodes.find((n) => n.port === range?.[2][1]) as Node;
  };
}

/** Tokens whose keys fall on each node in turn, `perNode` of each, every one in a slot of its own. */
async function tokensByNode(cluster: RedisClusterNodes, perNode: number) {
  const owner = await slotOwners(cluster);
  const picked = new Map<Node, Array<{ token: Tok; slot: number }>>(cluster.nodes.map((n) => [n, []]));
  const slots = new Set<number>();
  while ([...picked.values()].some((list) => list.length < perNode)) {
    const token: Tok = { id: randomUUID(), key: 'k', subject: 's', permissions: ['*'] };
    const slot = (await cluster.nodes[0]?.client.call('CLUSTER', 'KEYSLOT', keyOf(token, 'x'))) as number;
    const list = picked.get(owner(slot)) as Array<{ token: Tok; slot: number }>;
    if (list.length < perNode && !slots.has(slot)) {
      slots.add(slot);
      list.push({ token, slot });
    }
  }
  return picked;
}

const errorsOf = async (gw: TestGateway) =>
  (await scrape(gw.adminUrl, 'gateway_rate_limit_decisions_total', { result: 'error' })) ?? 0;

t.test('limits exact across nodes; a moved slot followed (ASK, then MOVED)', async (t) => {
  if (!requireRedisServer(t)) return;
  const cluster = await startRedisCluster(t);
  const byNode = await tokensByNode(cluster, 2);
  const all = [...byNode.values()].flat();
  const gw = await startGateway({
    auth: { signature: { tokens: [...Object.values(TOKENS), ...all.map((p) => p.token)] } },
    rate_limits: {
      // One node named: ioredis finds the others.
      store: { type: 'redis', cluster: [cluster.nodes[0]?.address], timeout: '500ms' },
      policies: [
        { name: 'default', limit: 3, window: '60s' },
        { name: 'members', limit: 2, window: '30s', operations: ['GetAssetGroupTagMember'] },
      ],
    },
  });
  t.teardown(() => gw.close());

  for (const [node, [first]] of byNode) {
    const token = (first as { token: Tok }).token;
    const one = await call(gw, { method: 'GET', target: MEMBER, token });
    t.equal(one.headers.ratelimit, '"members";r=1;t=30', `${node.address}: both policies counted`);
    t.equal((await call(gw, { method: 'GET', target: MEMBER, token })).status, 200);
    t.equal((await call(gw, { method: 'GET', target: MEMBER, token })).status, 429, 'members is full');
    const other = await call(gw, { method: 'GET', target: CHECKSUM, token });
    t.equal(other.headers.ratelimit, '"default";r=0;t=60', 'the refused request used none of default');
    t.equal((await call(gw, { method: 'GET', target: CHECKSUM, token })).status, 429, 'default is full');
    const keys = (await node.client.keys('gateway:rl:*')).sort();
    t.same(keys, [keyOf(token, 'default:3:60'), keyOf(token, 'members:2:30')], 'on its own node');
    t.equal(await node.client.zcard(keyOf(token, 'default:3:60')), 3);
  }
  t.equal(await errorsOf(gw), 0, 'no decision failed');

  // A slot moved from one node to another while its identity is counted.
  const [from, to] = cluster.nodes as [Node, Node];
  const moving = (byNode.get(from) as Array<{ token: Tok; slot: number }>)[1] as { token: Tok; slot: number };
  const { token, slot } = moving;
  t.equal(
    (await call(gw, { method: 'GET', target: CHECKSUM, token })).headers.ratelimit,
    '"default";r=2;t=60',
  );
  await to.client.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', from.id);
  await from.client.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', to.id);
  const keys = (await from.client.call('CLUSTER', 'GETKEYSINSLOT', slot, 10)) as string[];
  t.same(keys, [keyOf(token, 'default:3:60')]);
  await from.client.call('MIGRATE', '127.0.0.1', to.port, '', 0, 5000, 'KEYS', ...keys);
  // The keys have left, the slot is still the first node's: it answers ASK.
  const asked = await call(gw, { method: 'GET', target: CHECKSUM, token });
  t.match(asked.headers.ratelimit, /^"default";r=1;t=(60|59)$/, 'counted on the importing node');
  for (const n of cluster.nodes) await n.client.call('CLUSTER', 'SETSLOT', slot, 'NODE', to.id);
  // Now the first node answers MOVED.
  const moved = await call(gw, { method: 'GET', target: CHECKSUM, token });
  t.match(moved.headers.ratelimit, /^"default";r=0;t=(60|59)$/, 'counted on the new owner');
  t.equal((await call(gw, { method: 'GET', target: CHECKSUM, token })).status, 429, 'the limit holds');
  t.equal(await to.client.zcard(keyOf(token, 'default:3:60')), 3, 'all three on the new owner');
  const stayed = (byNode.get(from)?.[0] as { token: Tok }).token;
  t.same(
    (await from.client.keys('gateway:rl:*')).sort(),
    [keyOf(stayed, 'default:3:60'), keyOf(stayed, 'members:2:30')],
    'the first node keeps only the keys of its other slots',
  );
  t.equal(await errorsOf(gw), 0, 'every redirection followed');
  const ready = (await (await fetch(`${gw.adminUrl}/readyz`)).json()) as any;
  t.equal(ready.checks['rate_limits.redis'], 'ok');

  // A node lost (no replica takes over): its identities' decisions follow on_error, each bounded by
  // the timeout; the other nodes keep deciding (until the cluster itself declares the node failed).
  const lost = cluster.nodes[2] as Node;
  await lost.kill();
  const orphan = (byNode.get(lost)?.[1] as { token: Tok }).token;
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    const res = await call(gw, { method: 'GET', target: CHECKSUM, token: orphan });
    const took = performance.now() - started;
    t.equal(res.status, 200, 'on_error allow');
    t.notOk(res.headers.ratelimit, 'not counted');
    t.ok(took < 3_000, `answered in ${Math.round(took)} ms`);
  }
  t.ok((await errorsOf(gw)) >= 5, 'counted as errors');
  const kept = (byNode.get(from)?.[0] as { token: Tok }).token;
  const full = await call(gw, { method: 'GET', target: CHECKSUM, token: kept });
  t.equal(full.status, 429, 'another node still decides');
  t.match(full.headers.ratelimit, /^"default";r=0;t=\d+$/);
});

t.test('a node that takes connections but never answers: each decision bounded by the timeout', async (t) => {
  if (!requireRedisServer(t)) return;
  const cluster = await startRedisCluster(t);
  const byNode = await tokensByNode(cluster, 1);
  const frozen = cluster.nodes[2] as Node;
  frozen.freeze();
  const tokenOn = (n: Node) => (byNode.get(n)?.[0] as { token: Tok }).token;
  const gw = await startGateway({
    auth: {
      signature: { tokens: [...Object.values(TOKENS), ...[...byNode.values()].flat().map((p) => p.token)] },
    },
    rate_limits: {
      store: { type: 'redis', cluster: [cluster.nodes[0]?.address], timeout: '100ms' },
      policies: [{ name: 'default', limit: 100, window: '60s' }],
    },
  });
  t.teardown(() => gw.close());
  // Concurrent requests: ioredis refuses those sent while its connection to the node is not ready,
  // and would retry them for up to 16 redirections of 100 ms without a deadline of the store's own.
  const started = performance.now();
  const answers = await Promise.all(
    Array.from({ length: 10 }, () => call(gw, { method: 'GET', target: CHECKSUM, token: tokenOn(frozen) })),
  );
  const took = performance.now() - started;
  t.same(
    answers.map((a) => a.status),
    Array(10).fill(200),
    'on_error allow',
  );
  t.ok(
    answers.every((a) => a.headers.ratelimit === undefined),
    'none counted',
  );
  t.ok(took < 1_000, `all answered in ${Math.round(took)} ms`);
  const counted = await call(gw, {
    method: 'GET',
    target: CHECKSUM,
    token: tokenOn(cluster.nodes[0] as Node),
  });
  t.equal(counted.headers.ratelimit, '"default";r=99;t=60', 'the other nodes decide');
});
