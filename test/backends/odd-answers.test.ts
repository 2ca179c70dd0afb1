/**
 * What an upstream may not do to a request: answer with a status outside 100–599 or a 101 nobody
 * asked for (a 502 at once on every upstream path, never a hang), or have its request line rebuilt
 * by a URL parser when every pooled connection is busy (pass-through sends the raw target).
 */
import { Agent } from 'node:http';
import { createServer, type Server } from 'node:net';
import t, { type Test } from 'tap';
import { call, errorOf, startGateway } from '../helpers/gateway.js';
import { startUpstream, UPSTREAM_TOKEN_ID, upstreamBackend } from '../helpers/upstream.js';
import { until } from '../helpers/wait.js';

/** Node's agent, with the method it hands each request to (not in its type declarations). */
const HttpAgent = Agent as unknown as {
  prototype: { addRequest: (...args: unknown[]) => unknown };
} & typeof Agent;
type HttpAgent = { addRequest: (...args: unknown[]) => unknown };

const MEMBER = '/api/v2/asset-group-tags/1/members/101';
const CHECKSUM = '/api/v2/collectors/sharphound/latest/checksum';

/** A TCP server that answers every request with `statusLine` and a small body. */
async function oddUpstream(t: Test, statusLine: string): Promise<string> {
  const server: Server = createServer((socket) => {
    socket.on('error', () => undefined);
    socket.once('data', () => socket.write(`${statusLine}\r\nContent-Length: 2\r\n\r\nok`));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as { port: number };
  return `http://127.0.0.1:${port}`;
}

const ODD = [
  'HTTP/1.1 099 Low',
  'HTTP/1.1 000 Zero',
  'HTTP/1.1 600 High',
  'HTTP/1.1 101 Switching Protocols',
];
const AUTH = { type: 'signature', token_id: UPSTREAM_TOKEN_ID, token_key: 'upstream-key' };

t.test('an odd status is a 502 at once, on every upstream path', async (t) => {
  for (const line of ODD) {
    const url = await oddUpstream(t, line);
    const gw = await startGateway({
      prefer: { allow_bypass: true },
      backends: {
        collectors: upstreamBackend({ url }),
        asset_group_tags: upstreamBackend({ url }),
      },
      passthrough: { url, auth: AUTH },
    });
    t.teardown(() => gw.close());
    for (const [name, target] of [
      ['member', MEMBER],
      ['checksum', CHECKSUM],
      ['pass-through', '/api/v2/self'],
    ]) {
      // No deadline at all (wait=-1): a hang would never end.
      const res = await call(gw, { method: 'GET', target, headers: { Prefer: 'wait=-1' } });
      t.equal(res.status, 502, `${line}: ${name}`);
      t.same(errorOf(res), {
        status: 502,
        context: 'upstream',
        message: 'upstream service sent an invalid answer',
      });
    }
    t.notOk(
      gw.logs.some((l) => /uncaught|unhandled/.test(String(l.msg))),
      'nothing escaped as an uncaught exception',
    );
  }
});

t.test('pass-through sends the raw target even when every pooled connection is busy', async (t) => {
  let handed = 0;
  const addRequest = HttpAgent.prototype.addRequest;
  HttpAgent.prototype.addRequest = function (this: HttpAgent, ...args: unknown[]) {
    handed++;
    return addRequest.apply(this, args);
  };
  t.teardown(() => {
    HttpAgent.prototype.addRequest = addRequest;
  });
  const stub = await startUpstream();
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  stub.respond = async (req, res) => {
    if (req.url === '/bh/api/v2/slow') await held;
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end('{}');
  };
  const gw = await startGateway({ passthrough: { url: `${stub.url}/bh`, auth: AUTH, connections: 1 } });
  t.teardown(async () => {
    release();
    await gw.close();
    await stub.close();
  });
  const slow = call(gw, { method: 'GET', target: '/api/v2/slow' });
  await until('the upstream holds the slow request', () => stub.seen.length > 0, undefined, 1);
  // The one connection is busy: these wait for it in the agent's queue. Released only once the
  // gateway has handed all of them to its agent (Node's own method, observed, not replaced).
  // Each one a URL parser would change: `{}` escaped, a bare `?` dropped.
  const targets = ['/api/v2/things/{x}?', '/api/v2/q/{a}?b={c}', '/api/v2/x?', '/api/v2/y/`z`?%zz'];
  const queued = targets.map((target) => call(gw, { method: 'GET', target }));
  await until(
    'the gateway hands every request to its agent',
    () => handed >= 1 + targets.length,
    undefined,
    5,
  );
  release();
  t.equal((await slow).status, 200);
  for (const res of await Promise.all(queued)) t.equal(res.status, 200);
  for (const target of targets) {
    const seen = stub.seen.find((s) => s.url === `/bh${target}`);
    t.ok(seen, `${target} went out byte for byte after the prefix`);
    t.equal(seen?.signatureValid, true, 'signed over what went out');
  }
});
