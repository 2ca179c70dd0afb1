/**
 * The shape of /metrics (contract §6): the series that exist at 0 from the first scrape, the build
 * and readiness gauges, latency buckets up to `prefer.max_wait`, reload counts, and upstream errors
 * that count only the upstream's own faults.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import { loadConfigFile } from '../../src/config/load.js';
import { AUTH_FAILURES } from '../../src/auth/authenticate.js';
import { OPERATIONS } from '../../src/observability/labels.js';
import { baseConfig, call, merge, ROOT, startGateway } from '../helpers/gateway.js';
import { metric, metricsText, series } from '../helpers/metrics.js';
import { gatewayOnSilentUpstream, startUpstream, upstreamBackend } from '../helpers/upstream.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';

t.test('every counter with fixed labels is exported at 0 from the first scrape', async (t) => {
  const gw = await startGateway();
  t.teardown(() => gw.close());
  const text = await metricsText(gw.adminUrl);
  for (const operation of OPERATIONS) {
    t.equal(metric(text, 'gateway_client_aborts_total', { operation }), 0, operation);
    t.equal(metric(text, 'gateway_deadline_exceeded_total', { operation }), 0, operation);
  }
  for (const [scheme, reasons] of Object.entries(AUTH_FAILURES)) {
    for (const reason of reasons) {
      t.equal(metric(text, 'gateway_auth_failures_total', { scheme, reason }), 0);
    }
  }
  for (const result of ['hit', 'miss', 'stale']) {
    t.equal(metric(text, 'gateway_checksum_cache_requests_total', { result }), 0, result);
  }
  for (const result of ['verified', 'cached', 'refused']) {
    t.equal(metric(text, 'gateway_jwt_verifications_total', { result }), 0, result);
  }
  for (const result of ['ok', 'error']) {
    t.equal(metric(text, 'gateway_config_reloads_total', { result }), 0, result);
  }
  t.equal(metric(text, 'gateway_requests_in_flight'), 0);
  t.equal(metric(text, 'gateway_token_store_stale_seconds'), 0, 'no token store: never stale');
  t.same(series(text, 'gateway_requests_total'), [], 'code series appear with their first answer');
});

t.test('gateway_build_info names the version of package.json and Node.js', async (t) => {
  const gw = await startGateway();
  t.teardown(() => gw.close());
  const { version } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  const text = await metricsText(gw.adminUrl);
  t.equal(metric(text, 'gateway_build_info', { version, node_version: process.versions.node }), 1);
});

t.test('gateway_ready has one series per readiness check, 0 when it fails', async (t) => {
  const stub = await startUpstream();
  const gw = await startGateway({ backends: { asset_group_tags: upstreamBackend(stub) } });
  t.teardown(() => gw.close());
  const text = await metricsText(gw.adminUrl);
  t.equal(metric(text, 'gateway_ready', { check: 'keys' }), 1);
  t.equal(metric(text, 'gateway_ready', { check: 'asset_group_tags' }), 1);
  const checks = ((await (await fetch(`${gw.adminUrl}/readyz`)).json()) as { checks: object }).checks;
  const named = series(text, 'gateway_ready').map((s) => s.labels.check);
  t.same(named.sort(), Object.keys(checks).sort(), 'the checks of /readyz');

  // The upstream goes away: the next request fails to connect, which marks it not ready.
  await stub.close();
  t.equal((await call(gw, { method: 'GET', target: MEMBER })).status, 502);
  const after = await metricsText(gw.adminUrl);
  t.equal(metric(after, 'gateway_ready', { check: 'asset_group_tags' }), 0);
  t.equal(metric(after, 'gateway_ready', { check: 'keys' }), 1);
  t.equal(
    metric(after, 'gateway_upstream_errors_total', { backend: 'asset_group_tags', kind: 'connect' }),
    1,
    "the upstream's fault is counted",
  );
});

t.test('latency buckets go up to prefer.max_wait', async (t) => {
  const gw = await startGateway();
  t.teardown(() => gw.close());
  t.equal((await call(gw, { method: 'GET', target: MEMBER })).status, 200);
  const text = await metricsText(gw.adminUrl);
  const les = (text: string) =>
    series(text, 'gateway_request_duration_seconds_bucket').map((s) => s.labels.le);
  const request = les(text);
  t.equal(request.at(-2), '300', 'the default max_wait (300 s) is the largest bucket');
  t.ok(request.includes('30') && request.includes('120'));

  const short = await startGateway({ prefer: { default_wait: 5, max_wait: 10 } });
  t.teardown(() => short.close());
  t.equal((await call(short, { method: 'GET', target: MEMBER })).status, 200);
  const shortText = await metricsText(short.adminUrl);
  t.same(les(shortText).slice(-3), ['5', '10', '+Inf'], 'max_wait 10: the last bucket is 10 s');
});

t.test('a reload that fails is counted as an error and keeps the last success', async (t) => {
  const gw = await startGateway({ prefer: { default_wait: 30 } });
  t.teardown(() => gw.close());
  const before = metric(
    await metricsText(gw.adminUrl),
    'gateway_config_last_reload_success_timestamp_seconds',
  );
  t.ok(before !== undefined && before > 0);
  const next = path.join(gw.dataDir, 'next.yaml');
  const over = { server: { tmp_dir: path.join(gw.dataDir, 'missing') }, prefer: { max_wait: 60 } };
  writeFileSync(
    next,
    stringify(merge(baseConfig(), over)).replaceAll(': collectors', `: ${gw.dataDir}/collectors`),
  );
  await t.rejects(gw.app.reload(loadConfigFile(next)), /not a writable folder/);
  const text = await metricsText(gw.adminUrl);
  t.equal(metric(text, 'gateway_config_reloads_total', { result: 'error' }), 1);
  t.equal(metric(text, 'gateway_config_reloads_total', { result: 'ok' }), 0);
  t.equal(metric(text, 'gateway_config_last_reload_success_timestamp_seconds'), before);
});

t.test('a client gone or its own deadline is no upstream error', async (t) => {
  const { gw } = await gatewayOnSilentUpstream(t);
  const res = await call(gw, { method: 'GET', target: MEMBER, headers: { Prefer: 'wait=1' } });
  t.equal(res.status, 504, 'the deadline fired');
  const text = await metricsText(gw.adminUrl);
  t.equal(metric(text, 'gateway_deadline_exceeded_total', { operation: 'GetAssetGroupTagMember' }), 1);
  t.same(series(text, 'gateway_upstream_errors_total'), [], 'nothing counted against the upstream');
  const line = gw.logs.find((l) => l.msg === 'request' && l.request_id === res.headers.requestid);
  t.ok((line?.upstream_ms as number) >= 900, 'upstream_ms: the time the call was out');
});
