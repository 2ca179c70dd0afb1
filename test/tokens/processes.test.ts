/**
 * Two gateway processes on one database, as replicas run (one of them with two workers): a token
 * created with `gateway tokens` verifies on both, and its revocation is refused by both, every
 * worker included, within one second. In workers mode the token metrics are exported from the
 * start and `gateway_tokens` is taken once, not summed over the workers.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import { baseConfig, request, ROOT, TOKENS } from '../helpers/gateway.js';
import { createDatabase, createSchema, requirePostgres } from '../helpers/postgres.js';
import { type ListeningGateway, startGatewayProcess, stopGatewayProcess } from '../helpers/process.js';
import { metric } from '../helpers/metrics.js';
import { createToken, get, tokensCli, tokenStore } from '../helpers/tokens.js';
import { until } from '../helpers/wait.js';

type Proc = ListeningGateway;

const admin = async (proc: Proc, what: string) =>
  request({ port: proc.adminPort }, { method: 'GET', target: what });

if (await requirePostgres(t)) {
  t.test(
    'a revocation is refused by two gateway processes, every worker included, within one second',
    async (t) => {
      const url = await createSchema(t, await createDatabase(t));
      const dir = mkdtempSync(path.join(tmpdir(), 'gateway-tokens-'));
      t.teardown(() => rmSync(dir, { recursive: true, force: true }));
      const write = (name: string, over: Record<string, unknown>) => {
        const file = path.join(dir, name);
        const base = baseConfig();
        const config = {
          ...base,
          ...over,
          logging: { level: 'info' },
          auth: {
            ...(base.auth as object),
            signature: { tokens: Object.values(TOKENS), token_store: tokenStore(url) },
          },
          backends: {
            collectors: { type: 'local', path: path.join(ROOT, 'config', 'collectors') },
            // Workers need a shared store: the providers live in the same database.
            sso_providers: { type: 'postgres', url, pool_size: 2 },
            asset_group_tags: { type: 'local', path: path.join(ROOT, 'config', 'asset-group-tags.json') },
          },
        };
        writeFileSync(file, stringify(config));
        return file;
      };
      const single = write('single.yaml', {});
      const workers = write('workers.yaml', { server: { host: '127.0.0.1', port: 0, workers: 2 } });
      const procs = await Promise.all([startGatewayProcess(t, single), startGatewayProcess(t, workers)]);
      t.teardown(() => Promise.all(procs.map(stopGatewayProcess)));
      for (const p of procs) {
        await until('ready', async () => (await admin(p, '/readyz')).status === 200);
      }

      const before = (await admin(procs[1]!, '/metrics')).body.toString();
      t.equal(metric(before, 'gateway_token_store_reloads_total', { result: 'error' }), 0, 'exported at 0');
      t.ok(
        (metric(before, 'gateway_token_store_reloads_total', { result: 'ok' }) ?? 0) >= 2,
        'each worker read the store',
      );
      t.equal(metric(before, 'gateway_tokens', { source: 'store' }), 0);
      t.equal(
        metric(before, 'gateway_tokens', { source: 'config' }),
        4,
        'taken once, not summed over two workers',
      );
      t.match(before, /# TYPE gateway_token_store_notify_lag_seconds histogram/);

      const tok = await createToken(single, 'replicated');
      for (const p of procs)
        await until('the token verifies', async () => (await get(p, tok)).status === 200);
      // Enough requests that both workers have served it (connections are handed out in turn).
      const served = await Promise.all(Array.from({ length: 8 }, () => get(procs[1]!, tok)));
      t.same(
        served.map((r) => r.status),
        Array(8).fill(200),
      );
      const after = (await admin(procs[1]!, '/metrics')).body.toString();
      t.equal(
        metric(after, 'gateway_tokens', { source: 'store' }),
        1,
        'one store token, whatever the worker count',
      );

      t.equal((await tokensCli(single, 'revoke', tok.id)).code, 0);
      const revoked = performance.now();
      // Refused for good: this request and the next eight (spread over the workers) are all 401.
      const refusedEverywhere = async (p: Proc) => {
        const answers = await Promise.all(Array.from({ length: 9 }, () => get(p, tok)));
        return answers.every((r) => r.status === 401);
      };
      const took = await Promise.all(procs.map((p) => until('refused', () => refusedEverywhere(p), 5_000)));
      const since = performance.now() - revoked;
      t.ok(
        since < 1000,
        `both processes refuse the revoked token ${Math.round(since)} ms after the revocation`,
      );
      t.ok(
        took.every((ms) => ms < 1000),
        `times: ${took.map((ms) => Math.round(ms)).join(', ')} ms`,
      );
      const res = await get(procs[1]!, tok);
      t.equal(
        res.json().errors[0].message,
        'unable to validate request signature for client: resource not found',
      );
    },
  );
}
