/**
 * `username` and `password` of the redis store against a private `redis-server` that requires a
 * password (`--requirepass`) and has an ACL user: both ways in count, a wrong password is a store
 * that cannot decide (on_error), and no password ever reaches the log.
 */
import t from 'tap';
import { call, startGateway } from '../helpers/gateway.js';
import { requireRedisServer } from '../helpers/redis.js';
import { serverDir, startServer, waitFor } from '../helpers/redis-topologies.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';
const DEFAULT_PASSWORD = 'default-secret';
const USER_PASSWORD = 'user-secret';

t.setTimeout(120_000);

t.test('username and password, password alone, and a wrong password', async (t) => {
  if (!requireRedisServer(t)) return;
  const server = await startServer(t, serverDir(t), {
    args: ['--requirepass', DEFAULT_PASSWORD, '--user', 'gw', 'on', `>${USER_PASSWORD}`, '~*', '&*', '+@all'],
    password: DEFAULT_PASSWORD,
  });
  const store = (over: Record<string, unknown>) => ({
    rate_limits: {
      store: { type: 'redis', url: `redis://127.0.0.1:${server.port}`, timeout: '500ms', ...over },
      policies: [{ name: 'default', limit: 5, window: '60s' }],
    },
  });
  const readyz = async (adminUrl: string) =>
    ((await (await fetch(`${adminUrl}/readyz`)).json()) as any).checks['rate_limits.redis'];

  const user = await startGateway(
    store({ username: 'gw', password: USER_PASSWORD, db: 3, key_prefix: 'user:' }),
  );
  t.teardown(() => user.close());
  t.equal((await call(user, { method: 'GET', target: MEMBER })).headers.ratelimit, '"default";r=4;t=60');
  t.equal(await readyz(user.adminUrl), 'ok');
  await server.client.select(3);
  t.equal((await server.client.keys('user:rl:*')).length, 1, 'counted in db 3 as the ACL user');

  const plain = await startGateway(store({ password: DEFAULT_PASSWORD, key_prefix: 'plain:' }));
  t.teardown(() => plain.close());
  t.equal((await call(plain, { method: 'GET', target: MEMBER })).headers.ratelimit, '"default";r=4;t=60');
  await server.client.select(0);
  t.equal((await server.client.keys('plain:rl:*')).length, 1, 'counted in db 0 as the default user');

  const wrong = await startGateway(store({ username: 'gw', password: 'not-the-password' }));
  t.teardown(() => wrong.close());
  const refused = await call(wrong, { method: 'GET', target: MEMBER });
  t.equal(refused.status, 200, 'on_error allow');
  t.notOk(refused.headers.ratelimit, 'nothing counted');
  t.equal(await readyz(wrong.adminUrl), 'redis unavailable');
  await waitFor(
    'the failure is logged',
    () => wrong.logs.some((l) => l.msg === 'rate limit store unavailable'),
    10_000,
  );
  const logged = JSON.stringify(wrong.logs);
  t.match(logged, /WRONGPASS/, 'the reason is logged');
  t.notMatch(logged, 'not-the-password', 'never the password');
  t.notMatch(JSON.stringify([...user.logs, ...plain.logs]), /secret/, 'never a password');
});
