import { readdirSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import { text } from 'node:stream/consumers';
import t, { type Test } from 'tap';
import { GatewayError } from '../../src/errors.js';
import { type BodyOptions, checkDeclaredLength, type HeldBody, readBody } from '../../src/http/body.js';
import { until } from '../helpers/wait.js';

type Outcome = { body: HeldBody; chunks: Buffer[]; files: string[] } | { error: unknown; files: string[] };

/** A real server whose handler reads each request's body with `options` and reports the outcome. */
async function serve(t: Test, options: Partial<BodyOptions> & { controller?: AbortController } = {}) {
  const dir = t.testdir();
  const outcomes: Array<(o: Outcome) => void> = [];
  let received = 0;
  const pending: Outcome[] = [];
  const deliver = (o: Outcome) => {
    const waiter = outcomes.shift();
    if (waiter) waiter(o);
    else pending.push(o);
  };
  const server = createServer(async (req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    try {
      const body = await readBody(req, {
        limit: 1024,
        memoryThreshold: 64,
        tmpDir: dir,
        idleTimeout: 5000,
        signal: (options.controller ?? new AbortController()).signal,
        onChunk: (c) => {
          received += c.length;
          chunks.push(c);
        },
        ...options,
      });
      deliver({ body, chunks, files: readdirSync(dir) });
      res.end('ok');
    } catch (error) {
      deliver({ error, files: readdirSync(dir) });
      res.statusCode = error instanceof GatewayError ? error.status : 500;
      res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const port = (server.address() as { port: number }).port;
  return {
    dir,
    /** Body bytes the server has read so far, over every request. */
    received: () => received,
    /** The outcome of the next request the server reads. */
    next: () =>
      new Promise<Outcome>((resolve) =>
        pending.length ? resolve(pending.shift() as Outcome) : outcomes.push(resolve),
      ),
    /** A raw connection that has sent `head` (and the blank line). */
    open: (head: string): Socket => {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => {});
      socket.write(`${head}\r\nHost: x\r\n\r\n`);
      t.teardown(() => void socket.destroy());
      return socket;
    },
  };
}

const chunked = (data: string) => `${data.length.toString(16)}\r\n${data}\r\n`;

t.test('a small body is held in memory and can be streamed again and again', async (t) => {
  const s = await serve(t);
  const socket = s.open('POST / HTTP/1.1\r\nContent-Length: 5');
  socket.write('hello');
  const o = await s.next();
  if (!('body' in o)) throw o.error;
  t.equal(o.body.size, 5);
  t.equal(await text(o.body.stream()), 'hello');
  t.equal(await text(o.body.stream()), 'hello');
  t.same(o.files, [], 'no temporary file');
  t.equal(Buffer.concat(o.chunks).toString(), 'hello', 'onChunk saw every byte');
});

t.test('a request without a body gives an empty one', async (t) => {
  const s = await serve(t);
  s.open('GET / HTTP/1.1');
  const o = await s.next();
  if (!('body' in o)) throw o.error;
  t.equal(o.body.size, 0);
  t.equal(await text(o.body.stream()), '');
  await o.body.dispose();
});

t.test('a body beyond the memory threshold is spooled to a private file that dispose removes', async (t) => {
  const s = await serve(t);
  const socket = s.open('POST / HTTP/1.1\r\nTransfer-Encoding: chunked');
  const parts = ['a'.repeat(40), 'b'.repeat(40), 'c'.repeat(300)];
  for (const p of parts) socket.write(chunked(p));
  socket.write('0\r\n\r\n');
  const o = await s.next();
  if (!('body' in o)) throw o.error;
  t.equal(o.body.size, 380);
  t.equal(o.files.length, 1, 'one temporary file');
  const file = `${s.dir}/${o.files[0]}`;
  t.equal(statSync(file).mode & 0o777, 0o600, 'readable by the gateway only');
  t.equal(await text(o.body.stream()), parts.join(''));
  t.equal(await text(o.body.stream()), parts.join(''), 'a fresh stream each time');
  await o.body.dispose();
  await o.body.dispose();
  t.same(readdirSync(s.dir), [], 'removed, and disposing twice is harmless');
});

t.test('a declared Content-Length over the limit is 413 before any byte is read', async (t) => {
  const s = await serve(t);
  s.open('POST / HTTP/1.1\r\nContent-Length: 1025');
  const o = await s.next();
  t.ok('error' in o);
  if ('error' in o)
    t.match(o.error, { status: 413, message: 'request body is larger than the limit of 1024 bytes' });
  t.throws(
    () => checkDeclaredLength({ headers: { 'content-length': '2000' } } as IncomingMessage, 1999),
    { status: 413, message: /larger than/ },
    'over by one',
  );
  t.doesNotThrow(() =>
    checkDeclaredLength({ headers: { 'content-length': '1999' } } as IncomingMessage, 1999),
  );
  t.doesNotThrow(() => checkDeclaredLength({ headers: {} } as IncomingMessage, 0));
});

t.test(
  'a chunked body that grows over the limit is 413 while streaming, and its file is removed',
  async (t) => {
    const s = await serve(t);
    const socket = s.open('POST / HTTP/1.1\r\nTransfer-Encoding: chunked');
    socket.write(chunked('x'.repeat(1000)));
    socket.write(chunked('y'.repeat(100)));
    const o = await s.next();
    if ('error' in o) t.match(o.error, { status: 413 });
    else t.fail('expected a 413');
    t.same(o.files, []);
  },
);

t.test('a stalled upload is 408 after the idle timeout', async (t) => {
  const s = await serve(t, { idleTimeout: 100 });
  const socket = s.open('POST / HTTP/1.1\r\nContent-Length: 10');
  socket.write('12345');
  const started = Date.now();
  const o = await s.next();
  if ('error' in o) t.match(o.error, { status: 408, message: 'request body was not received in time' });
  else t.fail('expected a 408');
  t.ok(Date.now() - started >= 90);
});

t.test('the deadline rejects with its own reason and removes the spooled file', async (t) => {
  const controller = new AbortController();
  const s = await serve(t, { controller, memoryThreshold: 0 });
  const socket = s.open('POST / HTTP/1.1\r\nContent-Length: 100');
  socket.write('partial');
  await until('the body is spooled to a file', () => readdirSync(s.dir).length === 1);
  t.equal(readdirSync(s.dir).length, 1, 'spooling');
  const reason = new GatewayError('GW_DEADLINE_EXCEEDED', 'request', 'request timed out');
  controller.abort(reason);
  const o = await s.next();
  if ('error' in o) t.equal(o.error, reason);
  else t.fail('expected the deadline');
  t.same(o.files, []);
});

t.test('an already fired deadline rejects at once', async (t) => {
  const controller = new AbortController();
  const reason = new GatewayError('GW_DEADLINE_EXCEEDED', 'request', 'request timed out');
  controller.abort(reason);
  const s = await serve(t, { controller });
  s.open('POST / HTTP/1.1\r\nContent-Length: 3');
  const o = await s.next();
  t.equal('error' in o && o.error, reason);
});

t.test('a client that goes away mid-body is a clean 400, in memory or spooled', async (t) => {
  for (const memoryThreshold of [1024, 0]) {
    const s = await serve(t, { memoryThreshold });
    const socket = s.open('POST / HTTP/1.1\r\nContent-Length: 100');
    socket.write('partial');
    await until('seven bytes are received', () => s.received() === 7);
    socket.destroy();
    const o = await s.next();
    if ('error' in o) t.match(o.error, { status: 400, message: 'request body was not received completely' });
    else t.fail('expected an abort');
    t.same(o.files, [], `nothing left behind (threshold ${memoryThreshold})`);
  }
});

t.test('an onChunk that throws ends the read with its error', async (t) => {
  const boom = new Error('boom');
  const s = await serve(t, {
    onChunk: () => {
      throw boom;
    },
  });
  const socket = s.open('POST / HTTP/1.1\r\nContent-Length: 3');
  socket.write('abc');
  const o = await s.next();
  t.equal('error' in o && o.error, boom);
});

t.test('a temporary folder that cannot be written fails the read without a crash', async (t) => {
  const s = await serve(t, { memoryThreshold: 0, tmpDir: '/nonexistent/gateway-test' });
  const socket = s.open('POST / HTTP/1.1\r\nContent-Length: 3');
  socket.write('abc');
  const o = await s.next();
  t.match('error' in o && o.error, { code: 'ENOENT' });
});

t.test('a request already read to its end gives an empty body; a destroyed one is an abort', async (t) => {
  const options = {
    limit: 10,
    memoryThreshold: 10,
    tmpDir: t.testdir(),
    idleTimeout: 10,
    signal: new AbortController().signal,
  };
  const ended = { headers: {}, readableEnded: true } as IncomingMessage;
  t.equal((await readBody(ended, options)).size, 0);
  const destroyed = { headers: {}, readableEnded: false, destroyed: true } as IncomingMessage;
  await t.rejects(readBody(destroyed, options), { status: 400, message: /not received completely/ });
});
