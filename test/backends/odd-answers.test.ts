/**
 * What an upstream may not do to a request: answer with a status outside 100–599 or a 101 nobody
 * asked for (a 502 at once on every upstream path, never a hang), or have its request line rebuilt
 * by a URL parser when every pooled connection is busy (pass-through sends the raw target).
 */
import { Agent } from 'node:http';
import { createServer, type Server } from 'node:net';
import t, { type Test } from 'tap';
import { call, errorOf, startGateway } from '../helpers/gateway.js';
import { scrape } from '../helpers/metrics.js';
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
  'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade',
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

/**
 * A keep-alive HTTP/1.1 server on raw TCP: `GET /bh/api/v2/odd` gets `statusLine`, every other request
 * a 200. Each request is recorded with the number of the connection it came on, and each closed
 * connection's number is kept.
 */
async function switchingUpstream(t: Test, statusLine: string) {
  const seen: Array<{ target: string; connection: number }> = [];
  const closed = new Set<number>();
  let connections = 0;
  const server: Server = createServer((socket) => {
    const connection = ++connections;
    let buffered = '';
    socket.on('error', () => undefined);
    socket.on('close', () => closed.add(connection));
    socket.on('data', (chunk) => {
      buffered += chunk.toString('latin1');
      let end: number;
      // Bodiless GETs only: a request is its head.
      while ((end = buffered.indexOf('\r\n\r\n')) >= 0) {
        const target = buffered.slice(0, end).split(' ')[1] ?? '';
        buffered = buffered.slice(end + 4);
        seen.push({ target, connection });
        socket.write(
          target === '/bh/api/v2/odd'
            ? `${statusLine}\r\nContent-Length: 2\r\n\r\nok`
            : 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"data":{}}',
        );
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/bh`, seen, closed };
}

const REFUSED = [
  'HTTP/1.1 101 Switching Protocols',
  // Node hands this one to an `upgrade` listener, never to `response`.
  'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade',
  'HTTP/1.1 600 High',
  // Node's parser reads it as status 99 (undici refuses it as malformed).
  'HTTP/1.1 099 Low',
];

t.test('pass-through: an unasked 101 or a status out of range is a 502 at once', async (t) => {
  for (const line of REFUSED) {
    const name = line.split('\r\n').join(' + ');
    const up = await switchingUpstream(t, line);
    // One pooled connection, and no timer of the relay's own that could end the wait first.
    const gw = await startGateway({
      passthrough: { url: up.url, auth: AUTH, connections: 1, headers_timeout: '120s' },
    });
    t.teardown(() => gw.close());
    const errorsOf = async () =>
      (await scrape(gw.adminUrl, 'gateway_upstream_errors_total', {
        backend: 'passthrough',
        kind: 'status',
      })) ?? 0;
    const before = await errorsOf();

    t.equal((await call(gw, { method: 'GET', target: '/api/v2/first' })).status, 200, `${name}: warm`);
    // A deadline of 30 s: an answer the relay never heard of would end as its 504.
    const res = await call(gw, { method: 'GET', target: '/api/v2/odd', headers: { Prefer: 'wait=30' } });
    t.equal(res.status, 502, `${name}: a 502, not the deadline's 504`);
    t.same(errorOf(res), {
      status: 502,
      context: 'upstream',
      message: 'upstream service sent an invalid answer',
    });
    const odd = up.seen.find((s) => s.target === '/bh/api/v2/odd');
    t.equal(odd?.connection, up.seen[0]?.connection, `${name}: the warm pooled connection carried it`);
    // The gateway closes the connection that answered it (a hang here fails the test).
    await until('the answering connection closed', () => up.closed.has(odd?.connection ?? 0));

    const next = await call(gw, { method: 'GET', target: '/api/v2/next' });
    t.equal(next.status, 200, `${name}: the next request through the pool is served`);
    t.equal(next.body.toString(), '{"data":{}}');
    t.not(up.seen.at(-1)?.connection, odd?.connection, `${name}: on a new connection`);
    t.equal(await errorsOf(), before + 1, `${name}: counted as kind status`);
  }
});
