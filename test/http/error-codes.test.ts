/**
 * The request's log line names the stable code of the error the gateway answered with (contract
 * §2 "Logs"), the parser's refusals included; an answer relayed from an upstream names none, and
 * the envelope on the wire stays without a code.
 */
import { createServer } from 'node:net';
import t from 'tap';
import { call, rawRequest, request, signed, startGateway, type TestGateway } from '../helpers/gateway.js';
import { startUpstream, upstreamBackend } from '../helpers/upstream.js';
import { until } from '../helpers/wait.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';

/** The log line of the request answered with `requestId`, once it is written. */
async function lineOf(gw: TestGateway, requestId: unknown): Promise<Record<string, unknown>> {
  const find = () => gw.logs.find((l) => l.msg === 'request' && l.request_id === requestId);
  await until('the request line', () => find() !== undefined);
  return find() as Record<string, unknown>;
}

/** A port on which nothing listens (taken, then given back). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

t.test('a refused request is logged with the code of its reason, never sent it', async (t) => {
  const gw = await startGateway();
  t.teardown(() => gw.close());
  const cases: Array<[string, Promise<Awaited<ReturnType<typeof request>>>, number, string]> = [
    ['no credentials', request(gw, { method: 'GET', target: MEMBER }), 401, 'GW_AUTH_MISSING'],
    [
      'a signature over another target',
      request(gw, {
        method: 'GET',
        target: MEMBER,
        headers: signed({ method: 'GET', target: '/api/v2/asset-group-tags/1/members/102' }),
      }),
      401,
      'GW_SIGNATURE_MISMATCH',
    ],
    [
      'a Prefer header out of form',
      call(gw, { method: 'GET', target: MEMBER, headers: { Prefer: 'wait=soon' } }),
      400,
      'GW_PREFER_INVALID',
    ],
    [
      'a path no route serves',
      call(gw, { method: 'GET', target: '/api/v2/nowhere' }),
      404,
      'GW_ROUTE_NOT_FOUND',
    ],
    [
      'a member that does not exist',
      call(gw, { method: 'GET', target: '/api/v2/asset-group-tags/1/members/999999' }),
      404,
      'GW_RESOURCE_NOT_FOUND',
    ],
  ];
  for (const [what, sent, status, code] of cases) {
    const res = await sent;
    t.equal(res.status, status, what);
    const line = await lineOf(gw, res.headers.requestid);
    t.equal(line.error_code, code, `${what}: logged as ${code}`);
    t.notOk(res.body.toString().includes('GW_'), `${what}: the envelope carries no code`);
    t.same(Object.keys(res.json()).sort(), ['errors', 'http_status', 'request_id', 'timestamp']);
  }
  const ok = await call(gw, { method: 'GET', target: MEMBER });
  t.equal(ok.status, 200);
  t.notOk('error_code' in (await lineOf(gw, ok.headers.requestid)), 'an answer has no code');
});

t.test('a request the HTTP parser refuses is logged with its code too', async (t) => {
  const gw = await startGateway();
  t.teardown(() => gw.close());
  const answer = await rawRequest(gw, 'GET /api/v2 HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n');
  t.match(answer, /^HTTP\/1\.1 400 /);
  const requestId = /requestid: (\S+)/i.exec(answer)?.[1];
  const line = await lineOf(gw, requestId);
  t.equal(line.error_code, 'GW_REQUEST_MALFORMED');
});

t.test(
  "an upstream's own error answer is relayed without a code; an unreachable one has its code",
  async (t) => {
    const stub = await startUpstream();
    stub.respond = (_req, res) => {
      res.writeHead(503, { 'Content-Type': 'application/json', RequestID: 'upstream-id-1' });
      res.end('{"http_status":503,"errors":[{"context":"","message":"busy"}]}');
    };
    const gw = await startGateway({ backends: { asset_group_tags: upstreamBackend(stub) } });
    const down = await startGateway({
      backends: { asset_group_tags: upstreamBackend({ url: `http://127.0.0.1:${await closedPort()}` }) },
    });
    t.teardown(async () => {
      await gw.close();
      await down.close();
      await stub.close();
    });
    const relayed = await call(gw, { method: 'GET', target: MEMBER });
    t.equal(relayed.status, 503, "the upstream's status passes through");
    const line = await lineOf(gw, relayed.headers.requestid);
    t.equal(line.status, 503);
    t.notOk('error_code' in line, 'a relayed answer carries no code');
    const unreachable = await call(down, { method: 'GET', target: MEMBER });
    t.equal(unreachable.status, 502);
    t.equal((await lineOf(down, unreachable.headers.requestid)).error_code, 'GW_UPSTREAM_UNREACHABLE');
  },
);
