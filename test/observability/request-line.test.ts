/**
 * The request's log line and counters (contract §6): the exact status as `code`, 499 for a client
 * that went away before its answer, in-flight requests, body bytes in and out, a bounded user agent.
 */
import { request as httpRequest } from 'node:http';
import t from 'tap';
import { call, multipart, signed, startGateway } from '../helpers/gateway.js';
import { startUpstream, upstreamBackend } from '../helpers/upstream.js';
import { until } from '../helpers/wait.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';

async function sample(adminUrl: string, line: RegExp): Promise<number | undefined> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const found = text.split('\n').find((l) => line.test(l));
  return found === undefined ? undefined : Number(found.split(' ').pop());
}

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
  t.equal(await sample(gw.adminUrl, /^gateway_requests_in_flight /), 0, 'nothing in flight once answered');
});

t.test('a client gone before its answer is logged and counted as 499, and in client aborts', async (t) => {
  const stub = await startUpstream();
  stub.respond = () => undefined; // never answers
  const gw = await startGateway({ backends: { asset_group_tags: upstreamBackend(stub) } });
  t.teardown(async () => {
    await gw.close();
    await stub.close();
  });
  const req = httpRequest({
    host: '127.0.0.1',
    port: gw.port,
    path: MEMBER,
    headers: signed({ method: 'GET', target: MEMBER }),
    agent: false,
  });
  req.on('error', () => undefined);
  req.end();
  await until(() => stub.seen.length > 0);
  t.equal(await sample(gw.adminUrl, /^gateway_requests_in_flight /), 1, 'one request in flight');
  req.destroy();
  await until(() => gw.logs.some((l) => l.msg === 'request'));
  const line = gw.logs.find((l) => l.msg === 'request');
  t.equal(line?.status, 499);
  t.equal(
    await sample(
      gw.adminUrl,
      /^gateway_requests_total\{operation="GetAssetGroupTagMember",method="GET",status_class="4xx",code="499"\}/,
    ),
    1,
  );
  t.equal(await sample(gw.adminUrl, /^gateway_client_aborts_total\{operation="GetAssetGroupTagMember"\}/), 1);
  t.equal(await sample(gw.adminUrl, /^gateway_requests_in_flight /), 0);
  await until(() => stub.seen[0]?.aborted === true);
  t.pass('the upstream request was aborted with it');
});
