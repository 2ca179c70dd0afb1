/**
 * A `url` that names a proxy (or a DNS name) moved to a new primary by a failover: the gateway's
 * open connection still reaches the old primary, now a replica that answers READONLY. The store
 * reconnects on READONLY, through the proxy, to the new primary.
 */
import { connect, createServer, type Socket } from 'node:net';
import t, { type Test } from 'tap';
import { call, startGateway } from '../helpers/gateway.js';
import { freePort, requireRedisServer } from '../helpers/redis.js';
import { serverDir, startServer, waitFor } from '../helpers/redis-topologies.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';

t.setTimeout(120_000);

/** A TCP proxy on 127.0.0.1 to the port `target()` names when a connection opens. */
async function proxy(t: Test, target: () => number): Promise<number> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(target(), '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return port;
}

t.test('a demoted primary behind the url: READONLY leads to the new primary', async (t) => {
  if (!requireRedisServer(t)) return;
  const dir = serverDir(t);
  const old = await startServer(t, dir, {});
  const promoted = await startServer(t, dir, {});
  let target = old.port;
  const port = await proxy(t, () => target);
  const gw = await startGateway({
    rate_limits: {
      store: { type: 'redis', url: `redis://127.0.0.1:${port}`, timeout: '500ms' },
      policies: [{ name: 'default', limit: 5, window: '60s' }],
    },
  });
  t.teardown(() => gw.close());
  t.equal((await call(gw, { method: 'GET', target: MEMBER })).headers.ratelimit, '"default";r=4;t=60');

  // The failover: the old primary follows the new one, and the proxy sends new connections there.
  await old.client.call('REPLICAOF', '127.0.0.1', String(promoted.port));
  target = promoted.port;
  const answers: number[] = [];
  await waitFor(
    'a decision counted on the new primary',
    async () => {
      const res = await call(gw, { method: 'GET', target: MEMBER });
      answers.push(res.status);
      return res.headers.ratelimit !== undefined;
    },
    20_000,
  );
  t.same(
    answers.filter((s) => s !== 200),
    [],
    'on_error allow meanwhile',
  );
  t.equal((await promoted.client.keys('gateway:rl:*')).length, 1, 'counted on the new primary');
  // The old primary's count was never replicated to the new one: it is lost.
  t.match((await call(gw, { method: 'GET', target: MEMBER })).headers.ratelimit, /^"default";r=3;t=(60|59)$/);
});
