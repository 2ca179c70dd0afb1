import t from 'tap';
import { call, request, startGateway } from '../helpers/gateway.js';
import { metric, series } from '../helpers/metrics.js';

t.test('admin listener', async (t) => {
  const gw = await startGateway();
  t.teardown(() => gw.close());

  t.test('livez and readyz', async (t) => {
    const live = await fetch(`${gw.adminUrl}/livez`);
    t.equal(live.status, 200);
    const ready = await fetch(`${gw.adminUrl}/readyz`);
    t.equal(ready.status, 200);
    t.same(await ready.json(), {
      status: 'ready',
      checks: {
        keys: 'ok',
        collectors: 'ok',
        sso_providers: 'ok',
        asset_group_tags: 'ok',
        // The audit store, named (contract §12): the providers file's trail beside it.
        audit: `file ${gw.dataDir}/sso-providers.json.audit.jsonl`,
      },
    });
    t.equal((await fetch(`${gw.adminUrl}/nope`)).status, 404);
    t.equal((await fetch(`${gw.adminUrl}/metrics`, { method: 'POST' })).status, 405);
  });

  t.test('the API port does not serve admin paths', async (t) => {
    t.equal((await request(gw, { method: 'GET', target: '/metrics' })).status, 404);
  });

  t.test('metrics: contract names, labels by operation, never raw paths or ids', async (t) => {
    await call(gw, { method: 'GET', target: '/api/v2/asset-group-tags/1/members/101' });
    await call(gw, { method: 'GET', target: '/api/v2/asset-group-tags/1/members/999999' });
    await request(gw, { method: 'GET', target: '/api/v2/secret-path-123' });
    await request(gw, { method: 'GET', target: '/api/v2/asset-group-tags/1/members/101' });
    const res = await fetch(`${gw.adminUrl}/metrics`);
    t.equal(res.status, 200);
    t.match(res.headers.get('content-type'), /^text\/plain/);
    const text = await res.text();
    for (const name of [
      'gateway_requests_total',
      'gateway_request_duration_seconds',
      'gateway_auth_failures_total',
      'gateway_deadline_exceeded_total',
      'gateway_checksum_cache_requests_total',
      'gateway_checksum_cache_bytes',
      'gateway_checksum_cache_evictions_total',
      'gateway_upstream_request_duration_seconds',
      'gateway_upstream_errors_total',
      'gateway_jwks_fetches_total',
      'gateway_jwks_keys',
      'gateway_store_operation_duration_seconds',
      'process_cpu_seconds_total',
      'nodejs_eventloop_lag_seconds',
    ]) {
      t.match(text, new RegExp(`^# TYPE ${name} `, 'm'), name);
    }
    const member = { operation: 'GetAssetGroupTagMember', method: 'GET' };
    t.equal(metric(text, 'gateway_requests_total', { ...member, status_class: '2xx', code: '200' }), 1);
    t.equal(metric(text, 'gateway_requests_total', { ...member, status_class: '4xx', code: '404' }), 1);
    t.equal(metric(text, 'gateway_requests_total', { ...member, status_class: '4xx', code: '401' }), 1);
    const unmatched = { operation: 'unmatched', method: 'GET', status_class: '4xx', code: '404' };
    t.equal(metric(text, 'gateway_requests_total', unmatched), 2);
    t.same(
      series(text, 'gateway_auth_failures_total', { scheme: 'none' }).filter((s) => s.value > 0),
      [{ name: 'gateway_auth_failures_total', labels: { scheme: 'none', reason: 'missing' }, value: 1 }],
      'the request without credentials',
    );
    t.notMatch(
      text,
      /="[^"]*(secret-path|999999|members|101)[^"]*"/,
      'no label value carries a path or an id',
    );
  });
});
