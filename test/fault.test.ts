/**
 * An uncaught exception or an unhandled rejection anywhere in the process (contract §6): the gateway
 * logs it, stops accepting connections, refuses new requests on open connections with 503 and
 * `Connection: close`, lets the requests in flight finish, and exits 1; a worker is replaced.
 * The fault comes from a test-only module loaded with `node --import`, through the real entry point.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { stringify } from 'yaml';
import { baseConfig, call, copySampleData, merge, ROOT, signed } from './helpers/gateway.js';
import { startGatewayProcess, stopGatewayProcess } from './helpers/process.js';
import { startUpstream, type StubUpstream, upstreamBackend } from './helpers/upstream.js';
import { until } from './helpers/wait.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';
const FAULT = ['--import', path.join(ROOT, 'test', 'helpers', 'fault.mjs')];

// Processes start and drain here: several seconds on a loaded 2-core machine.
t.setTimeout(600_000);

/** An upstream that holds every member request until `release()`. */
async function heldUpstream(t: Test): Promise<{ stub: StubUpstream; release(): void }> {
  const stub = await startUpstream();
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  stub.respond = async (_req, res) => {
    await held;
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end('{"data":{"member":{"id":101}}}');
  };
  t.teardown(async () => {
    release();
    await stub.close();
  });
  return { stub, release: () => release() };
}

function writeConfig(t: Test, over: Record<string, unknown>): string {
  const dir = copySampleData();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'gateway.yaml');
  writeFileSync(file, stringify(merge(baseConfig(), over)));
  return file;
}

/** A keep-alive connection on which raw requests are written and answers read as they come. */
function openConnection(
  port: number,
): Promise<{ socket: Socket; received(): string; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
    const closed = new Promise<void>((done) => socket.once('close', () => done()));
    socket.once('error', reject);
    socket.once('connect', () => resolve({ socket, received: () => text, closed }));
  });
}

function rawGet(target: string): string {
  const h = signed({ method: 'GET', target });
  return (
    `GET ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: ${h.Authorization}\r\n` +
    `RequestDate: ${h.RequestDate}\r\nSignature: ${h.Signature}\r\n\r\n`
  );
}

/** Opens a TCP connection to `port` and closes it: undefined when accepted, else the error's code. */
function connectionError(port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(undefined);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

for (const [kind, message] of [
  ['exception', 'uncaught exception; stopping'],
  ['rejection', 'unhandled rejection; stopping'],
] as const) {
  t.test(
    `an unhandled ${kind}: in flight finishes, new requests 503, no new connections, exit 1`,
    async (t) => {
      const { stub, release } = await heldUpstream(t);
      const file = writeConfig(t, {
        server: { shutdown_grace: '20s' },
        backends: { asset_group_tags: upstreamBackend(stub) },
      });
      const gw = await startGatewayProcess(t, file, { nodeArgs: FAULT, env: { GATEWAY_TEST_FAULT: kind } });

      // Request 1 is in flight at the upstream when the fault comes; request 2 is still being sent
      // on a second open connection (half its headers).
      const first = await openConnection(gw.port);
      first.socket.write(rawGet(MEMBER));
      await until('the upstream holds request 1', () => stub.seen.length > 0);
      const second = await openConnection(gw.port);
      const request2 = rawGet(MEMBER);
      const half = request2.indexOf('\r\n') + 2;
      second.socket.write(request2.slice(0, half));

      gw.child.kill('SIGUSR2');
      const fault = await gw.waitFor((l) => l.msg === message);
      t.equal(fault.level, 'fatal');
      t.match(fault.err, { message: /test fault/ }, 'with the error');
      let refusal: string | undefined;
      await until(
        'the listener stops accepting',
        async () => (refusal = await connectionError(gw.port)) !== undefined,
      );
      t.equal(refusal, 'ECONNREFUSED', 'new connections are refused');

      // Request 2 completes after the fault: refused, and its connection closes after the answer.
      second.socket.write(request2.slice(half));
      await second.closed;
      t.match(second.received(), /^HTTP\/1\.1 503 /, 'the new request is refused');
      t.match(second.received(), /\r\nConnection: close\r\n/i);
      t.match(
        second.received(),
        /"http_status":503,.*"errors":\[\{"context":"server","message":"the gateway is restarting; send the request again"\}\]/,
      );
      const line = await gw.waitFor((l) => l.msg === 'request');
      t.equal(line.status, 503, 'logged, and before the request in flight ended');

      release();
      await first.closed;
      t.match(first.received(), /^HTTP\/1\.1 200 /, 'the request in flight finished');
      t.equal(stub.seen.length, 1, 'the refused request never reached the backend');
      t.equal(await gw.exited, 1, 'exit 1');
      t.ok(gw.lines.some((l) => l.msg === 'stopped'));
    },
  );
}

t.test('a worker that meets an uncaught exception is replaced, the port keeps serving', async (t) => {
  const stub = await startUpstream();
  t.teardown(() => stub.close());
  const dir = mkdtempSync(path.join(tmpdir(), 'gateway-fault-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = writeConfig(t, {
    server: { workers: 2 },
    backends: { sso_providers: upstreamBackend(stub) },
  });
  const gw = await startGatewayProcess(t, file, { nodeArgs: FAULT });
  t.teardown(() => stopGatewayProcess(gw));
  await gw.waitForCount((l) => l.msg === 'worker listening', 2);
  const victim = gw.lines.find((l) => l.msg === 'worker listening');
  process.kill(victim?.pid as number, 'SIGUSR2');
  const fault = await gw.waitFor((l) => l.msg === 'uncaught exception; stopping');
  t.equal(fault.worker, victim?.worker, 'the worker logs it');
  const exited = await gw.waitFor((l) => l.msg === 'worker exited; starting another');
  t.equal(exited.code, 1);
  await gw.waitForCount((l) => l.msg === 'worker listening', 3);
  for (let i = 0; i < 4; i++) {
    t.equal((await call(gw, { method: 'GET', target: MEMBER })).status, 200, 'still serving');
  }
  t.equal(await stopGatewayProcess(gw), 0, 'the primary itself stops cleanly');
});
