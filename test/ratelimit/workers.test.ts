/**
 * `server.workers` > 1 with the redis store: the workers share one count, as replicas do.
 */
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import { baseConfig, call, copySampleData, merge, TOKENS } from '../helpers/gateway.js';
import { startGatewayProcess, stopGatewayProcess } from '../helpers/process.js';
import { cleanUp, REDIS_URL, requireRedis, uniquePrefix } from '../helpers/redis.js';
import { startUpstream } from '../helpers/upstream.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';
const LIMIT = 10;

t.setTimeout(120_000);

t.test('two workers on one Redis admit the limit once, not once each', async (t) => {
  if (!(await requireRedis(t))) return;
  const prefix = uniquePrefix();
  cleanUp(t, prefix);
  // Several workers need an sso_providers backend other than the local file.
  const stub = await startUpstream();
  t.teardown(() => stub.close());
  const dir = copySampleData();
  const file = path.join(dir, 'gateway.yaml');
  const config = merge(baseConfig(), {
    server: { workers: 2 },
    rate_limits: {
      store: { type: 'redis', url: REDIS_URL, key_prefix: prefix, timeout: '1s' },
      policies: [{ name: 'default', limit: LIMIT, window: '60s' }],
    },
  });
  (config.backends as Record<string, unknown>).sso_providers = {
    type: 'upstream',
    url: stub.url,
    auth: { type: 'bearer', token: 'gateway-test' },
  };
  writeFileSync(file, stringify(config));
  const gw = await startGatewayProcess(file);
  t.teardown(async () => {
    await stopGatewayProcess(gw);
    rmSync(dir, { recursive: true, force: true });
  });
  // Every request on a connection of its own: the primary spreads them over both workers.
  const answers = await Promise.all(
    Array.from({ length: 3 * LIMIT }, () =>
      call(gw, { method: 'GET', target: MEMBER, token: TOKENS.reader }),
    ),
  );
  t.equal(answers.filter((a) => a.status === 200).length, LIMIT);
  t.equal(answers.filter((a) => a.status === 429).length, 2 * LIMIT);
  await gw.waitForCount((l) => l.msg === 'request', 3 * LIMIT);
  const workers = new Set(gw.lines.filter((l) => l.msg === 'request').map((l) => l.worker));
  t.equal(workers.size, 2, 'both workers answered');
});
