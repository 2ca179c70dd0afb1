/**
 * Two gateway processes on one Redis admit together exactly what one would: synchronised bursts
 * split between them over several windows, and a SIGHUP that keeps the counts.
 */
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import { baseConfig, call, copySampleData, merge, TOKENS } from '../helpers/gateway.js';
import { type ListeningGateway, startGatewayProcess, stopGatewayProcess } from '../helpers/process.js';
import { cleanUp, REDIS_URL, redisClient, requireRedis, uniquePrefix } from '../helpers/redis.js';
import { until } from '../helpers/wait.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';
const LIMIT = 20;

t.setTimeout(120_000);

t.test('two gateways on one Redis admit together what one would', async (t) => {
  if (!(await requireRedis(t))) return;
  const prefix = uniquePrefix();
  cleanUp(t, prefix);
  // A data folder each: one process writes a providers file's audit trail (contract §12).
  const dataDirs = [copySampleData(), copySampleData()];
  const configFiles = dataDirs.map((dir) => path.join(dir, 'gateway.yaml'));
  const config = (limit: number) =>
    stringify(
      merge(baseConfig(), {
        rate_limits: {
          store: { type: 'redis', url: REDIS_URL, key_prefix: prefix, timeout: '1s' },
          policies: [
            { name: 'shared', limit: LIMIT, window: '1s' },
            { name: 'other', limit, window: '60s' },
          ],
        },
      }),
    );
  for (const file of configFiles) writeFileSync(file, config(10_000));
  const gateways: ListeningGateway[] = await Promise.all(
    configFiles.map((file) => startGatewayProcess(file)),
  );
  t.teardown(async () => {
    await Promise.all(gateways.map(stopGatewayProcess));
    for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
  });
  const redis = redisClient(t);
  const redisNow = async () => {
    const [s, us] = await redis.time();
    return Number(s) * 1e6 + Number(us);
  };

  // Each window: twice the limit at once, half to each gateway. Exactly the limit is admitted.
  let sent = 0;
  for (let window = 0; window < 4; window++) {
    const answers = await Promise.all(
      Array.from({ length: 2 * LIMIT }, (_, i) =>
        call(gateways[i % 2] as ListeningGateway, { method: 'GET', target: MEMBER, token: TOKENS.reader }),
      ),
    );
    sent += answers.length;
    const admitted = answers.filter((a) => a.status === 200);
    t.equal(admitted.length, LIMIT, `window ${window}: exactly the limit admitted`);
    t.equal(answers.filter((a) => a.status === 429).length, LIMIT);
    // One count for both: each remaining number was given out once, whichever process answered.
    const remaining = admitted.map((a) => Number(/;r=(\d+);/.exec(String(a.headers.ratelimit))?.[1]));
    t.same(
      remaining.sort((a, b) => a - b),
      Array.from({ length: LIMIT }, (_, i) => i),
      'the remaining counts are shared, not per process',
    );
    // Wait (on Redis's clock) for the window to pass before the next burst.
    const edge = (await redisNow()) + 1_000_000;
    await until("the window passes on Redis's clock", async () => (await redisNow()) > edge, undefined, 20);
  }
  t.equal(sent, 8 * LIMIT);

  // A SIGHUP of both, with `shared` unchanged and `other` changed: `other` starts from zero
  // (its key carries its limit), `shared` keeps its count.
  const before = await call(gateways[0] as ListeningGateway, {
    method: 'GET',
    target: MEMBER,
    token: TOKENS.reader,
  });
  t.equal(before.headers.ratelimit, `"shared";r=${LIMIT - 1};t=1`);
  for (const file of configFiles) writeFileSync(file, config(5));
  for (const gw of gateways) gw.child.kill('SIGHUP');
  await Promise.all(gateways.map((gw) => gw.waitFor((l) => l.msg === 'configuration reloaded')));
  const after = await call(gateways[1] as ListeningGateway, {
    method: 'GET',
    target: MEMBER,
    token: TOKENS.reader,
  });
  t.equal(after.headers['ratelimit-policy'], `"shared";q=${LIMIT};w=1, "other";q=5;w=60`);
  t.equal(after.headers.ratelimit, '"other";r=4;t=60', 'the changed policy starts from zero');
});
