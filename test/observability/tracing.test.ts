/**
 * OpenTelemetry tracing (contract §10), checked on what a collector receives: real OTLP/HTTP exports
 * (JSON) on a receiver started here, from the real gateway, through a real upstream, PostgreSQL and
 * a JWKS server. Spans go out in batches; closing the gateway sends what it holds, so each test reads
 * the spans once the gateway has stopped.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import {
  baseConfig,
  call,
  copySampleData,
  merge,
  request,
  ROOT,
  signed,
  startGateway,
} from '../helpers/gateway.js';
import { startJwksServer, testKey } from '../helpers/jwks.js';
import { type ReceivedSpan, startCollector } from '../helpers/otlp.js';
import { createDatabase, createSchema, importStores, requirePostgres } from '../helpers/postgres.js';
import { spawnGateway } from '../helpers/process.js';
import { startUpstream, upstreamBackend } from '../helpers/upstream.js';
import { until } from '../helpers/wait.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';

const byName = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);
const one = (spans: ReceivedSpan[], name: string) => {
  const found = byName(spans, name);
  if (found.length !== 1) throw new Error(`expected one span ${name}, got ${spans.map((s) => s.name)}`);
  return found[0] as ReceivedSpan;
};

t.test(
  'a request through an upstream: server, authenticate and upstream spans, traceparent carried on',
  async (t) => {
    const collector = await startCollector();
    t.teardown(() => collector.close());
    const stub = await startUpstream();
    t.teardown(() => stub.close());
    const gw = await startGateway({
      tracing: { otlp_endpoint: collector.url, service_name: 'gateway-under-test' },
      backends: { asset_group_tags: upstreamBackend(stub) },
    });
    const target = `${MEMBER}?probe=query-secret`;
    const res = await call(gw, {
      method: 'GET',
      target,
      headers: { traceparent: `00-${TRACE}-${PARENT}-01`, 'User-Agent': 'tracing-test/1' },
    });
    t.equal(res.status, 200);
    await gw.close();
    await until('three spans are exported', () => collector.spans.length >= 3);
    t.match(collector.contentTypes[0], /^application\/json/, 'the JSON encoding');

    const server = one(collector.spans, 'GET GetAssetGroupTagMember');
    t.equal(server.traceId, TRACE, 'the incoming trace is continued');
    t.equal(server.parentSpanId, PARENT, "under the client's span");
    t.equal(server.kind, 2, 'a server span');
    t.match(server.attributes, {
      'http.request.method': 'GET',
      'url.path': MEMBER,
      'url.scheme': 'http',
      'http.response.status_code': 200,
      'client.address': '127.0.0.1',
      'user_agent.original': 'tracing-test/1',
      'gateway.operation': 'GetAssetGroupTagMember',
    });
    t.equal(server.resource['service.name'], 'gateway-under-test');

    const auth = one(collector.spans, 'authenticate');
    t.same([auth.traceId, auth.parentSpanId, auth.kind], [TRACE, server.spanId, 1], 'authenticate: a child');
    const upstream = one(collector.spans, 'GET');
    t.same(
      [upstream.traceId, upstream.parentSpanId, upstream.kind],
      [TRACE, server.spanId, 3],
      'upstream: a child',
    );
    t.match(upstream.attributes, {
      'http.request.method': 'GET',
      'server.address': '127.0.0.1',
      'server.port': stub.port,
      'url.full': `${stub.url}${MEMBER}`,
      'http.response.status_code': 200,
      'gateway.backend': 'asset_group_tags',
    });
    t.equal(
      stub.seen[0]?.headers.traceparent,
      `00-${TRACE}-${upstream.spanId}-01`,
      "the upstream span's traceparent",
    );

    const line = gw.logs.find((l) => l.msg === 'request' && l.request_id === res.headers.requestid);
    t.equal(line?.trace_id, TRACE, 'the log line names the trace');
    const everything = JSON.stringify(collector.spans);
    for (const secret of ['query-secret', 'bhesignature', signed({ method: 'GET', target }).Signature]) {
      t.notMatch(everything, secret, 'no credential or query string in any span');
    }
  },
);

t.test('without a traceparent a new trace starts; sample_ratio 0 records only sampled clients', async (t) => {
  const collector = await startCollector();
  t.teardown(() => collector.close());
  const stub = await startUpstream();
  t.teardown(() => stub.close());
  const gw = await startGateway({
    tracing: { otlp_endpoint: collector.url, sample_ratio: 0 },
    backends: { asset_group_tags: upstreamBackend(stub) },
  });
  const fresh = await call(gw, { method: 'GET', target: MEMBER });
  t.equal(fresh.status, 200);
  const sampled = await call(gw, {
    method: 'GET',
    target: MEMBER,
    headers: { traceparent: `00-${TRACE}-${PARENT}-01` },
  });
  t.equal(sampled.status, 200);
  const refused = await request(gw, { method: 'GET', target: MEMBER });
  t.equal(refused.status, 401);
  await gw.close();
  await until('three spans are exported', () => collector.spans.length >= 3);
  t.same([...new Set(collector.spans.map((s) => s.traceId))], [TRACE], "only the sampled client's trace");
  // Unsampled, the upstream still gets a traceparent: a new trace id, flags 00.
  const first = stub.seen[0]?.headers.traceparent as string;
  t.match(first, /^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
  t.not(first.slice(3, 35), TRACE);
  const fields = gw.logs.filter((l) => l.msg === 'request').map((l) => l.trace_id);
  t.equal(fields.length, 3);
  t.ok(
    fields.every((id) => typeof id === 'string' && /^[0-9a-f]{32}$/.test(id)),
    'every line names its trace',
  );
  t.equal(first.slice(3, 35), fields[0], "the unsampled upstream request carries its request's trace");
});

t.test('a refused authentication marks its span failed with the reason', async (t) => {
  const collector = await startCollector();
  t.teardown(() => collector.close());
  const gw = await startGateway({ tracing: { otlp_endpoint: collector.url } });
  const res = await request(gw, { method: 'GET', target: MEMBER, headers: { Authorization: 'Bearer x' } });
  t.equal(res.status, 401);
  await gw.close();
  await until('two spans are exported', () => collector.spans.length >= 2);
  const auth = one(collector.spans, 'authenticate');
  t.equal(auth.status, 2, 'error status');
  t.equal(auth.attributes['error.type'], 'malformed');
  t.equal(one(collector.spans, 'GET GetAssetGroupTagMember').attributes['http.response.status_code'], 401);
});

t.test('pass-through requests carry the traceparent of their own span', async (t) => {
  const collector = await startCollector();
  t.teardown(() => collector.close());
  const stub = await startUpstream();
  t.teardown(() => stub.close());
  const gw = await startGateway({
    tracing: { otlp_endpoint: collector.url },
    passthrough: { url: stub.url, auth: { type: 'bearer', token: 'service-token' } },
  });
  const target = '/api/v2/self?secret=1';
  const res = await call(gw, { method: 'GET', target, headers: { traceparent: `00-${TRACE}-${PARENT}-01` } });
  t.equal(res.status, 200);
  await gw.close();
  await until('three spans are exported', () => collector.spans.length >= 3);
  const server = one(collector.spans, 'GET passthrough');
  const client = one(collector.spans, 'GET');
  t.same([client.traceId, client.parentSpanId, client.kind], [TRACE, server.spanId, 3]);
  t.equal(client.attributes['url.full'], `${stub.url}/api/v2/self`, 'no query string');
  t.equal(stub.seen[0]?.headers.traceparent, `00-${TRACE}-${client.spanId}-01`);
  t.equal(stub.seen[0]?.url, target, 'the raw target still goes out as it came');
});

t.test(
  'a JWKS fetch is a span: at start its own trace, during a request a child of authenticate',
  async (t) => {
    const first = await testKey('ES256', 'first');
    const second = await testKey('ES256', 'second', { n: 1 });
    const jwks = await startJwksServer([first.jwk]);
    t.teardown(() => jwks.close());
    const collector = await startCollector();
    t.teardown(() => collector.close());
    const gw = await startGateway({
      tracing: { otlp_endpoint: collector.url },
      auth: { jwt: { jwks_url: jwks.url, jwks_cooldown: '10ms' } },
    });
    await until('the gateway is ready', async () => (await fetch(`${gw.adminUrl}/readyz`)).status === 200);
    // A new key: the request's unknown kid makes the gateway fetch again, within the request.
    jwks.keys = [first.jwk, second.jwk];
    const token = await second.sign({ sub: 'traced', permissions: ['asset_group_tags:read'] });
    const res = await request(gw, {
      method: 'GET',
      target: MEMBER,
      headers: { Authorization: `Bearer ${token}`, traceparent: `00-${TRACE}-${PARENT}-01` },
    });
    t.equal(res.status, 200);
    await gw.close();
    await until('two key fetch spans are exported', () => byName(collector.spans, 'jwks fetch').length >= 2);
    const fetches = byName(collector.spans, 'jwks fetch');
    const auth = one(collector.spans, 'authenticate');
    const during = fetches.find((s) => s.traceId === TRACE);
    t.same([during?.parentSpanId, during?.kind], [auth.spanId, 3], 'the request-time fetch is a child');
    const atStart = fetches.find((s) => s.traceId !== TRACE);
    t.equal(atStart?.parentSpanId, '', 'the start-up fetch is a root span');
    t.match(during?.attributes, { 'url.full': jwks.url.replace(/\?.*$/, ''), 'server.address': '127.0.0.1' });
  },
);

t.test('a PostgreSQL call is a child span of the request', async (t) => {
  if (!(await requirePostgres(t))) return;
  const url = await createSchema(t, await createDatabase(t));
  const sample = (name: string) => JSON.parse(readFileSync(path.join(ROOT, 'config', name), 'utf8'));
  await importStores(t, url, { sso: sample('sso-providers.json'), tags: sample('asset-group-tags.json') });
  const collector = await startCollector();
  t.teardown(() => collector.close());
  const backend = { type: 'postgres', url, path: undefined };
  const gw = await startGateway({
    tracing: { otlp_endpoint: collector.url },
    backends: { sso_providers: backend, asset_group_tags: backend },
  });
  const res = await call(gw, {
    method: 'GET',
    target: MEMBER,
    headers: { traceparent: `00-${TRACE}-${PARENT}-01` },
  });
  t.equal(res.status, 200);
  await gw.close();
  await until('the PostgreSQL span is exported', () =>
    collector.spans.some((s) => s.name === 'asset_group_tags.get_member'),
  );
  const server = one(collector.spans, 'GET GetAssetGroupTagMember');
  const db = one(collector.spans, 'asset_group_tags.get_member');
  t.same([db.traceId, db.parentSpanId, db.kind], [TRACE, server.spanId, 3]);
  t.match(db.attributes, {
    'db.system.name': 'postgresql',
    'db.operation.name': 'asset_group_tags.get_member',
  });
  t.notMatch(JSON.stringify(db), /postgres:\/\//, 'never the connection URL');
  const line = gw.logs.find((l) => l.request_id === res.headers.requestid);
  t.equal(typeof line?.upstream_ms, 'number', 'the database time is on the line');
});

t.test('workers mode: each worker exports the spans of the requests it served', async (t) => {
  const collector = await startCollector();
  t.teardown(() => collector.close());
  const stub = await startUpstream();
  t.teardown(() => stub.close());
  const dir = copySampleData();
  const file = path.join(dir, 'gateway.yaml');
  const config = merge(baseConfig(), {
    server: { workers: 2, shutdown_grace: '5s' },
    tracing: { otlp_endpoint: collector.url },
    backends: { sso_providers: upstreamBackend(stub), asset_group_tags: upstreamBackend(stub) },
  });
  writeFileSync(file, stringify(config));
  const proc = spawnGateway(file);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  t.teardown(() => proc.child.kill('SIGKILL'));
  const listening = await proc.waitFor((l) => l.msg === 'listening');
  const gw = { port: listening.port as number };
  const K = 6;
  for (let i = 0; i < K; i++) t.equal((await call(gw, { method: 'GET', target: MEMBER })).status, 200);
  await proc.waitForCount((l) => l.msg === 'request' && typeof l.trace_id === 'string', K);
  proc.child.kill('SIGTERM');
  t.equal(await proc.exited, 0);
  await until(
    `${K} request spans are exported`,
    () => byName(collector.spans, 'GET GetAssetGroupTagMember').length >= K,
  );
  const lines = proc.lines.filter((l) => l.msg === 'request');
  t.equal(new Set(lines.map((l) => l.worker)).size, 2, 'both workers served');
  const servers = byName(collector.spans, 'GET GetAssetGroupTagMember');
  t.same(
    servers.map((s) => s.traceId).sort(),
    lines.map((l) => l.trace_id).sort(),
    "every line's trace arrived",
  );
  for (const seen of stub.seen) t.match(seen.headers.traceparent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
});

t.test('tracing off loads none of the OpenTelemetry SDK; on, it is loaded', async (t) => {
  const stub = await startUpstream();
  t.teardown(() => stub.close());
  const collector = await startCollector();
  t.teardown(() => collector.close());
  const run = async (over: Record<string, unknown>) => {
    const dir = copySampleData();
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'gateway.yaml');
    writeFileSync(file, stringify(merge(baseConfig(), over)));
    const imports = path.join(dir, 'imports.txt');
    writeFileSync(imports, '');
    const proc = spawnGateway(file, {
      nodeArgs: ['--import', path.join(ROOT, 'test', 'helpers', 'record-imports.mjs')],
      env: { GATEWAY_TEST_IMPORTS: imports },
    });
    t.teardown(() => proc.child.kill('SIGKILL'));
    const listening = await proc.waitFor((l) => l.msg === 'listening');
    const res = await call({ port: listening.port as number }, { method: 'GET', target: MEMBER });
    t.equal(res.status, 200);
    proc.child.kill('SIGTERM');
    t.equal(await proc.exited, 0);
    return {
      loaded: readFileSync(imports, 'utf8').split('\n').filter(Boolean),
      line: proc.lines.find((l) => l.msg === 'request'),
    };
  };
  const backends = { backends: { asset_group_tags: upstreamBackend(stub) } };
  const off = await run(backends);
  t.same(off.loaded, [], 'no @opentelemetry package resolved');
  t.notOk(off.line && 'trace_id' in off.line, 'no trace_id');
  t.match(stub.seen[0]?.headers, { 'x-request-id': String }, 'the upstream was called');
  t.notOk(stub.seen[0]?.headers.traceparent, 'no traceparent invented when off');
  const on = await run({ ...backends, tracing: { otlp_endpoint: collector.url } });
  t.ok(on.loaded.includes('@opentelemetry/sdk-trace-base'), 'the SDK is loaded when configured');
  t.match(on.line, { trace_id: /^[0-9a-f]{32}$/ });
});
