import { X509Certificate } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { connect, type TLSSocket } from 'node:tls';
import t, { type Test } from 'tap';
import { stringify } from 'yaml';
import { baseConfig, copySampleData, merge } from '../helpers/gateway.js';
import {
  type ListeningGateway,
  spawnGateway,
  startGatewayProcess,
  stopGatewayProcess,
} from '../helpers/process.js';
import { httpsRequest, Pki, SecretMount, servedCertificate } from '../helpers/tls.js';
import { metric } from '../helpers/metrics.js';
import { until } from '../helpers/wait.js';

// A primary and two workers, each loading its certificates (several seconds on a loaded machine).
t.setTimeout(240_000);

const pki = new Pki();
t.teardown(() => pki.close());
const ca = pki.ca('cluster-ca');
const first = ca.issue('c-first', { cn: 'first', san: ['DNS:localhost', 'IP:127.0.0.1'], days: 20 });
const second = ca.issue('c-second', { cn: 'second', san: ['DNS:localhost', 'IP:127.0.0.1'], days: 40 });
const admin = ca.issue('c-admin', { cn: 'admin', san: ['DNS:localhost', 'IP:127.0.0.1'], days: 10 });
const trust = { ca: ca.cert };

async function startCluster(t: Test): Promise<{ gw: ListeningGateway; mount: SecretMount }> {
  // workers > 1 needs an sso_providers backend other than the local file.
  const upstream = createServer((req, res) => {
    req.resume();
    res.end('{}');
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    upstream.close();
    upstream.closeAllConnections();
  });
  const dir = copySampleData();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const mount = new SecretMount(path.join(dir, 'tls'));
  mount.mount(first);
  const config = merge(baseConfig(), {
    server: { workers: 2, tls: { cert: mount.cert, key: mount.key } },
    admin: { tls: { cert: admin.cert, key: admin.key } },
  });
  (config.backends as Record<string, unknown>).sso_providers = {
    type: 'upstream',
    url: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
    auth: { type: 'bearer', token: 'x' },
  };
  const file = path.join(dir, 'gateway.yaml');
  writeFileSync(file, stringify(config));
  const gw = await startGatewayProcess(file);
  t.teardown(() => stopGatewayProcess(gw));
  return { gw, mount };
}

interface Resumed {
  reused: boolean;
  worker: unknown;
}

/** One connection (resuming `session` when given): whether it resumed, and which worker answered. */
function connectOnce(
  gw: ListeningGateway,
  session?: Buffer,
): Promise<Resumed & { session: Buffer | undefined }> {
  return new Promise((resolve, reject) => {
    const socket: TLSSocket = connect({
      host: '127.0.0.1',
      port: gw.port,
      ca: readFileSync(ca.cert),
      servername: 'localhost',
      ...(session && { session }),
    });
    let ticket: Buffer | undefined;
    let answer = '';
    socket.on('session', (s: Buffer) => (ticket ??= s));
    let reused = false;
    socket.on('secureConnect', () => {
      reused = socket.isSessionReused();
      socket.write(
        'GET /api/v2/collectors/sharphound/latest/checksum HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      );
    });
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => (answer += c));
    socket.on('error', reject);
    socket.on('close', async () => {
      const id = /requestid: (\S+)/i.exec(answer)?.[1];
      const line = await gw.waitFor((l) => l.msg === 'request' && l.request_id === id);
      resolve({ reused, worker: line.worker, session: ticket });
    });
  });
}

t.test('workers share session ticket keys: a session resumes on any worker', async (t) => {
  const { gw } = await startCluster(t);
  const { session } = await connectOnce(gw);
  t.ok(session, 'the first connection got a session ticket');
  const resumed: Resumed[] = [];
  for (let i = 0; i < 6; i++) resumed.push(await connectOnce(gw, session));
  t.ok(
    resumed.every((r) => r.reused),
    'every connection resumed',
  );
  t.ok(new Set(resumed.map((r) => r.worker)).size >= 2, 'on more than one worker');
});

t.test(
  'every worker takes a swapped certificate; metrics come from the workers and the primary',
  async (t) => {
    const { gw, mount } = await startCluster(t);
    mount.mount(second);
    // Several connections in a row all get the new certificate: every worker has it.
    const allNew = async () => {
      for (let i = 0; i < 4; i++) if ((await servedCertificate(gw.port, trust)).cn !== 'second') return false;
      return true;
    };
    await until('every worker serves the new certificate', allNew);
    await gw.waitForCount((l) => l.msg === 'tls reloaded' && l.tls === 'server.tls', 2);
    const text = (await httpsRequest(gw.adminPort, { ...trust, target: '/metrics' })).body;
    const notAfter = (pair: { cert: string }) =>
      Math.floor(Date.parse(new X509Certificate(readFileSync(pair.cert)).validTo) / 1000);
    const notAfterOf = (listener: string) =>
      metric(text, 'gateway_tls_certificate_not_after_timestamp_seconds', { listener });
    t.equal(notAfterOf('api'), notAfter(second));
    t.equal(notAfterOf('admin'), notAfter(admin));
    t.equal(metric(text, 'gateway_tls_reloads_total', { result: 'ok' }), 2);
    // SIGHUP: every worker (and the primary, for the admin listener) reads its files again.
    gw.child.kill('SIGHUP');
    await gw.waitForCount((l) => l.msg === 'tls reloaded' && l.tls === 'server.tls', 4);
    await gw.waitFor((l) => l.msg === 'tls reloaded' && l.tls === 'admin.tls');
    t.equal((await servedCertificate(gw.port, trust)).cn, 'second');
  },
);

t.test('with workers, an expired certificate stops the start (exit 1, naming the key)', async (t) => {
  const dir = copySampleData();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const expired = ca.issue('c-expired', { cn: 'expired', san: ['DNS:localhost'], days: -1 });
  const config = merge(baseConfig(), {
    server: { workers: 2, tls: { cert: expired.cert, key: expired.key } },
  });
  (config.backends as Record<string, unknown>).sso_providers = {
    type: 'upstream',
    url: 'http://127.0.0.1:1',
    auth: { type: 'bearer', token: 'x' },
  };
  const file = path.join(dir, 'gateway.yaml');
  writeFileSync(file, stringify(config));
  const proc = spawnGateway(file);
  t.equal(await proc.exited, 1);
  t.match(proc.stderr(), /server\.tls\.cert: the certificate expired/);
});
