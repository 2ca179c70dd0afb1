/**
 * `tls: {ca}` of the redis store applies to every topology: one server, the Sentinels and the
 * primary they name, and every node of a cluster, each a real `redis-server` listening over TLS
 * only, with a certificate of a private CA.
 */
import t, { type Test } from 'tap';
import { call, startGateway, type TestGateway } from '../helpers/gateway.js';
import { requireRedisServer } from '../helpers/redis.js';
import {
  PRIMARY_NAME,
  type ServerTls,
  serverDir,
  startRedisCluster,
  startSentinelSet,
  startServer,
  waitFor,
} from '../helpers/redis-topologies.js';
import { Pki } from '../helpers/tls.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';

t.setTimeout(180_000);

function serverTls(t: Test): ServerTls {
  const pki = new Pki();
  t.teardown(() => pki.close());
  const ca = pki.ca('redis-ca');
  const server = ca.issue('redis', { cn: 'localhost', san: ['IP:127.0.0.1', 'DNS:localhost'] });
  const peer = ca.issue('redis-peer', { cn: 'redis-peer', usage: 'client' });
  return { ...server, clientCert: peer.cert, clientKey: peer.key, ca: ca.cert };
}

async function limited(t: Test, store: Record<string, unknown>): Promise<TestGateway> {
  const gw = await startGateway({
    rate_limits: {
      store: { type: 'redis', timeout: '500ms', ...store },
      policies: [{ name: 'default', limit: 5, window: '60s' }],
    },
  });
  t.teardown(() => gw.close());
  return gw;
}

const readyz = async (gw: TestGateway) =>
  ((await (await fetch(`${gw.adminUrl}/readyz`)).json()) as any).checks['rate_limits.redis'];

t.test('one server over TLS: trusted through ca, refused without it', async (t) => {
  if (!requireRedisServer(t)) return;
  const tls = serverTls(t);
  const server = await startServer(t, serverDir(t), { tls });
  const gw = await limited(t, { url: `rediss://127.0.0.1:${server.port}`, tls: { ca: tls.ca } });
  t.equal((await call(gw, { method: 'GET', target: MEMBER })).headers.ratelimit, '"default";r=4;t=60');
  t.equal((await server.client.keys('gateway:rl:*')).length, 1);

  const untrusted = await limited(t, { url: `rediss://127.0.0.1:${server.port}` });
  const res = await call(untrusted, { method: 'GET', target: MEMBER });
  t.equal(res.status, 200, 'on_error allow');
  t.notOk(res.headers.ratelimit, 'the server was not trusted');
  t.equal(await readyz(untrusted), 'redis unavailable');
  await waitFor('the failure is logged', () => untrusted.logs.some((l) => l.store === 'redis'), 10_000);
  t.match(JSON.stringify(untrusted.logs), /certificate/);
});

t.test('Sentinels and their primary over TLS', async (t) => {
  if (!requireRedisServer(t)) return;
  const tls = serverTls(t);
  const set = await startSentinelSet(t, { tls });
  const gw = await limited(t, {
    sentinels: set.sentinels.map((s) => s.address),
    name: PRIMARY_NAME,
    tls: { ca: tls.ca },
  });
  t.equal((await call(gw, { method: 'GET', target: MEMBER })).headers.ratelimit, '"default";r=4;t=60');
  t.equal((await set.primary.client.keys('gateway:rl:*')).length, 1, 'counted on the primary');
  t.equal(await readyz(gw), 'ok');
});

t.test('every node of a cluster over TLS', async (t) => {
  if (!requireRedisServer(t)) return;
  const tls = serverTls(t);
  const cluster = await startRedisCluster(t, tls);
  const gw = await limited(t, { cluster: [cluster.nodes[1]?.address], tls: { ca: tls.ca } });
  t.equal((await call(gw, { method: 'GET', target: MEMBER })).headers.ratelimit, '"default";r=4;t=60');
  t.equal((await call(gw, { method: 'GET', target: MEMBER })).headers.ratelimit, '"default";r=3;t=60');
  const keys = await Promise.all(cluster.nodes.map((n) => n.client.keys('gateway:rl:*')));
  t.equal(keys.flat().length, 1, 'one key, on the node of its slot');
  t.equal(await readyz(gw), 'ok');
});
