/**
 * The request's log line and counters (contract §6): the exact status as `code`, 499 for a client
 * that went away before its answer, in-flight requests, body bytes in and out, a bounded user agent.
 */
import { request as httpRequest } from 'node:http';
import t from 'tap';
import { call, multipart, rawRequest, signed, startGateway } from '../helpers/gateway.js';
import { gatewayOnSilentUpstream, startUpstream, upstreamBackend } from '../helpers/upstream.js';
import { metric, metricsText, scrape } from '../helpers/metrics.js';
import { until } from '../helpers/wait.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';

t.test('a line names the bytes in and out, the user agent (cut at 256) and the exact status', async (t) => {
  const gw = await startGateway();
  t.teardown(() => gw.close());
  const res = await call(gw, { method: 'GET', target: MEMBER, headers: { 'User-Agent': 'a'.repeat(300) } });
  t.equal(res.status, 200);
  const line = gw.logs.find((l) => l.msg === 'request' && l.request_id === res.headers.requestid);
  t.equal(line?.status, 200);
  t.equal(line?.bytes_in, 0);
  t.equal(line?.bytes_out, res.body.length, 'the body bytes written');
  t.equal(line?.user_agent, 'a'.repeat(256));
  const form = multipart([{ name: 'name', value: 'Counted' }]);
  const patch = await call(gw, {
    method: 'PATCH',
    target: '/api/v2/sso-providers/1',
    body: form.body,
    headers: { 'Content-Type': form.contentType },
  });
  const patched = gw.logs.find((l) => l.msg === 'request' && l.request_id === patch.headers.requestid);
  t.equal(patched?.bytes_in, form.body.length, 'the body bytes read');
  t.equal(patched?.bytes_out, patch.body.length);
  t.notOk('user_agent' in (patched ?? {}), 'no agent sent, none logged');
  const head = await call(gw, { method: 'HEAD', target: MEMBER });
  const headLine = gw.logs.find((l) => l.msg === 'request' && l.request_id === head.headers.requestid);
  t.equal(headLine?.bytes_out, 0, 'a HEAD writes no body');
  t.equal(await scrape(gw.adminUrl, 'gateway_requests_in_flight'), 0, 'nothing in flight once answered');
});

t.test('a client gone before its answer is logged and counted as 499, and in client aborts', async (t) => {
  const { gw, stub } = await gatewayOnSilentUpstream(t);
  const req = httpRequest({
    host: '127.0.0.1',
    port: gw.port,
    path: MEMBER,
    headers: signed({ method: 'GET', target: MEMBER }),
    agent: false,
  });
  req.on('error', () => undefined);
  req.end();
  await until('the upstream receives the request', () => stub.seen.length > 0);
  t.equal(await scrape(gw.adminUrl, 'gateway_requests_in_flight'), 1, 'one request in flight');
  req.destroy();
  await until('the request is logged', () => gw.logs.some((l) => l.msg === 'request'));
  const line = gw.logs.find((l) => l.msg === 'request');
  t.equal(line?.status, 499);
  t.equal(
    await scrape(gw.adminUrl, 'gateway_requests_total', {
      operation: 'GetAssetGroupTagMember',
      method: 'GET',
      status_class: '4xx',
      code: '499',
    }),
    1,
  );
  t.equal(
    await scrape(gw.adminUrl, 'gateway_client_aborts_total', { operation: 'GetAssetGroupTagMember' }),
    1,
  );
  t.equal(await scrape(gw.adminUrl, 'gateway_requests_in_flight'), 0);
  await until('the upstream exchange ends', () => stub.seen[0]?.closed === true);
  t.equal(stub.seen[0]?.aborted, true, 'the upstream request was aborted with it');
  t.equal(
    await scrape(gw.adminUrl, 'gateway_upstream_errors_total'),
    undefined,
    'a client gone is no upstream error',
  );
});

t.test('requests refused by the parser get a full line: duration, method, path, client', async (t) => {
  const gw = await startGateway({ server: { max_header_size: 2048 } });
  t.teardown(() => gw.close());
  const big = await rawRequest(
    gw,
    `GET ${MEMBER}?q=secret HTTP/1.1\r\nHost: x\r\nUser-Agent: probe/1\r\nX-Big: ${'a'.repeat(4096)}\r\n\r\n`,
  );
  t.match(big, /^HTTP\/1\.1 431 /);
  await until('the 431 is logged', () => gw.logs.some((l) => l.msg === 'request' && l.status === 431));
  const line = gw.logs.find((l) => l.msg === 'request' && l.status === 431);
  t.match(line, {
    operation: 'unmatched',
    method: 'GET',
    path: MEMBER,
    client: '127.0.0.1',
    bytes_in: 0,
    user_agent: 'probe/1',
  });
  t.equal(typeof line?.duration_ms, 'number');
  t.ok((line?.bytes_out as number) > 0 && big.endsWith('}'), 'the envelope bytes');
  t.notMatch(JSON.stringify(line), /secret/, 'never the query');

  const garbage = await rawRequest(gw, 'GARBAGE\r\n\r\n');
  t.match(garbage, /^HTTP\/1\.1 400 /);
  await until('the 400 is logged', () => gw.logs.some((l) => l.msg === 'request' && l.status === 400));
  const refused = gw.logs.find((l) => l.msg === 'request' && l.status === 400);
  t.match(refused, { method: null, path: null, client: '127.0.0.1', duration_ms: Number });
  const text = await metricsText(gw.adminUrl);
  const unmatched = { operation: 'unmatched', status_class: '4xx' };
  t.equal(metric(text, 'gateway_requests_total', { ...unmatched, method: 'GET', code: '431' }), 1);
  t.equal(metric(text, 'gateway_requests_total', { ...unmatched, method: 'OTHER', code: '400' }), 1);
});

t.test('upstream_ms names the time a backend call was out, only when one went out', async (t) => {
  const stub = await startUpstream();
  const gw = await startGateway({ backends: { asset_group_tags: upstreamBackend(stub) } });
  t.teardown(async () => {
    await gw.close();
    await stub.close();
  });
  const res = await call(gw, { method: 'GET', target: MEMBER });
  t.equal(res.status, 200);
  await until('the request is logged', () => gw.logs.some((l) => l.msg === 'request'));
  const line = gw.logs.find((l) => l.request_id === res.headers.requestid);
  t.equal(typeof line?.upstream_ms, 'number');
  t.ok((line?.upstream_ms as number) <= (line?.duration_ms as number));
  // A checksum fetched through the cache (a miss) counts for the request that started it.
  const viaCache = await startGateway({ backends: { collectors: upstreamBackend(stub) } });
  t.teardown(() => viaCache.close());
  const fetched = await call(viaCache, {
    method: 'GET',
    target: '/api/v2/collectors/sharphound/v2.0.0/checksum',
  });
  t.equal(fetched.status, 200);
  await until('the cached request is logged', () =>
    viaCache.logs.some((l) => l.request_id === fetched.headers.requestid),
  );
  const cached = viaCache.logs.find((l) => l.request_id === fetched.headers.requestid);
  t.equal(typeof cached?.upstream_ms, 'number', 'a cache miss fetched upstream');
  const local = await call(gw, { method: 'GET', target: '/api/v2/collectors/sharphound/latest/checksum' });
  t.equal(local.status, 200);
  await until('the local request is logged', () =>
    gw.logs.some((l) => l.request_id === local.headers.requestid),
  );
  t.notOk('upstream_ms' in gw.logs.find((l) => l.request_id === local.headers.requestid)!, 'local: none');
});
