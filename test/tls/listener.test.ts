import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import path from 'node:path';
import t, { type Test } from 'tap';
import { signed, startGateway, type TestGateway } from '../helpers/gateway.js';
import {
  httpsRequest,
  keepAliveAgent,
  type Pair,
  Pki,
  SecretMount,
  servedCertificate,
} from '../helpers/tls.js';
import { until } from '../helpers/wait.js';
import { metric } from '../helpers/metrics.js';

// Each case makes keys with openssl and waits for the gateway's file checks (every 2 s).
t.setTimeout(120_000);

const CHECKSUM = '/api/v2/collectors/sharphound/latest/checksum';
const pki = new Pki();
t.teardown(() => pki.close());
const ca = pki.ca('listener-ca');
const first = ca.issue('first', { cn: 'first', san: ['DNS:localhost', 'IP:127.0.0.1'], days: 20 });
const second = ca.issue('second', { cn: 'second', san: ['DNS:localhost', 'IP:127.0.0.1'], days: 40 });
const expired = ca.issue('expired', { cn: 'expired', san: ['DNS:localhost'], days: -1 });
const admin = ca.issue('admin', { cn: 'admin', san: ['DNS:localhost', 'IP:127.0.0.1'], days: 10 });
const trust = { ca: ca.cert };

const notAfter = (pair: Pair) =>
  Math.floor(Date.parse(new X509Certificate(readFileSync(pair.cert)).validTo) / 1000);

/** A gateway whose API certificate is mounted as a Kubernetes Secret, and whose admin listener is HTTPS. */
async function start(
  t: Test,
  over: Record<string, unknown> = {},
): Promise<{ gw: TestGateway; mount: SecretMount }> {
  const mount = new SecretMount(path.join(pki.dir, `mount-${Math.random().toString(16).slice(2)}`));
  mount.mount(first);
  const gw = await startGateway({
    server: { tls: { cert: mount.cert, key: mount.key } },
    admin: { tls: { cert: admin.cert, key: admin.key } },
    ...over,
  });
  t.teardown(() => gw.close());
  return { gw, mount };
}

/** `/metrics` over HTTPS. */
async function metrics(gw: TestGateway): Promise<string> {
  return (await httpsRequest(gw.adminPort, { ...trust, target: '/metrics' })).body;
}

t.test('the API listener speaks HTTPS only, with the walk-through calls working over it', async (t) => {
  const { gw } = await start(t);
  const res = await httpsRequest(gw.port, {
    ...trust,
    target: CHECKSUM,
    headers: signed({ method: 'GET', target: CHECKSUM }),
  });
  t.equal(res.status, 200);
  t.equal((await servedCertificate(gw.port, trust)).cn, 'first');
  // Plain HTTP on the HTTPS port gets no HTTP answer.
  const plain = await new Promise<string>((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port: gw.port, path: CHECKSUM, agent: false }, (r) =>
      resolve(`status ${r.statusCode}`),
    );
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
    req.end();
  });
  t.notMatch(plain, /^status 2/);
  // TLS 1.2 by default; TLSv1.3 refuses a TLS 1.2 client.
  t.equal((await servedCertificate(gw.port, { ...trust, maxVersion: 'TLSv1.2' })).cn, 'first');
});

t.test('min_version TLSv1.3 refuses a TLS 1.2 client', async (t) => {
  const { gw } = await start(t, {
    server: { tls: { cert: first.cert, key: first.key, min_version: 'TLSv1.3' } },
  });
  await t.rejects(servedCertificate(gw.port, { ...trust, maxVersion: 'TLSv1.2' }));
  t.equal((await servedCertificate(gw.port, trust)).cn, 'first');
});

t.test(
  'the admin listener speaks HTTPS, and exports expiry and reload metrics from the first scrape',
  async (t) => {
    const { gw } = await start(t);
    const text = await metrics(gw);
    t.equal(
      metric(text, 'gateway_tls_certificate_not_after_timestamp_seconds', { listener: 'api' }),
      notAfter(first),
    );
    t.equal(
      metric(text, 'gateway_tls_certificate_not_after_timestamp_seconds', { listener: 'admin' }),
      notAfter(admin),
    );
    t.equal(metric(text, 'gateway_tls_reloads_total', { result: 'ok' }), 0);
    t.equal(metric(text, 'gateway_tls_reloads_total', { result: 'error' }), 0);
    const ready = await httpsRequest(gw.adminPort, { ...trust, target: '/readyz' });
    t.equal(ready.status, 200);
  },
);

t.test('without TLS there are no TLS metrics', async (t) => {
  const { startGateway: plain } = await import('../helpers/gateway.js');
  const gw = await plain();
  t.teardown(() => gw.close());
  const text = await (await fetch(`${gw.adminUrl}/metrics`)).text();
  t.notMatch(text, /gateway_tls_/);
});

t.test('a swapped Secret serves new connections while an open connection keeps working', async (t) => {
  const { gw, mount } = await start(t);
  const agent = keepAliveAgent(trust);
  t.teardown(() => agent.destroy());
  const before = await httpsRequest(gw.port, {
    target: CHECKSUM,
    agent,
    headers: signed({ method: 'GET', target: CHECKSUM }),
  });
  t.equal(before.status, 200);
  mount.mount(second);
  // Polled, never slept: the gateway looks at the files at least every 5 s.
  await until(
    'the new certificate is served',
    async () => (await servedCertificate(gw.port, trust)).cn === 'second',
  );
  const after = await httpsRequest(gw.port, {
    target: CHECKSUM,
    agent,
    headers: signed({ method: 'GET', target: CHECKSUM }),
  });
  t.equal(after.status, 200, 'the kept-alive connection still answers');
  t.equal(after.serial, before.serial, 'on the connection made with the old certificate');
  const text = await metrics(gw);
  t.equal(
    metric(text, 'gateway_tls_certificate_not_after_timestamp_seconds', { listener: 'api' }),
    notAfter(second),
  );
  t.equal(metric(text, 'gateway_tls_reloads_total', { result: 'ok' }), 1);
  t.ok(gw.logs.some((l) => l.msg === 'tls reloaded' && l.tls === 'server.tls'));
});

t.test('a pair that does not load is refused, logged and counted; the old one keeps serving', async (t) => {
  const { gw, mount } = await start(t);
  const failures = () => gw.logs.filter((l) => l.msg === 'tls reload failed');
  // A key that is not the certificate's.
  mount.swap({ 'tls.crt': second.cert, 'tls.key': first.key });
  await until('the first failed reload is logged', () => failures().length === 1);
  t.match(failures()[0], { tls: 'server.tls', reason: /server\.tls\.key: does not match server\.tls\.cert/ });
  t.equal((await servedCertificate(gw.port, trust)).cn, 'first');
  // An expired certificate.
  mount.mount(expired);
  await until('the second failed reload is logged', () => failures().length === 2);
  t.match(failures()[1].reason, /server\.tls\.cert: the certificate expired/);
  t.equal((await servedCertificate(gw.port, trust)).cn, 'first');
  const text = await metrics(gw);
  t.equal(metric(text, 'gateway_tls_reloads_total', { result: 'error' }), 2);
  t.equal(metric(text, 'gateway_tls_reloads_total', { result: 'ok' }), 0);
  // No key material in any log line.
  const key = readFileSync(first.key, 'utf8').split('\n')[1] as string;
  t.notOk(JSON.stringify(gw.logs).includes(key));
  // A good pair afterwards is taken.
  mount.mount(second);
  await until(
    'the new certificate is served',
    async () => (await servedCertificate(gw.port, trust)).cn === 'second',
  );
});

t.test('a reload (SIGHUP) reads the files again, including new paths', async (t) => {
  const { gw } = await start(t);
  const { loadConfigFile } = await import('../../src/config/load.js');
  const { writeFileSync } = await import('node:fs');
  const { parse, stringify } = await import('yaml');
  const config = parse(readFileSync(gw.configFile, 'utf8'));
  config.server.tls = { cert: second.cert, key: second.key };
  writeFileSync(gw.configFile, stringify(config));
  await gw.app.reload(loadConfigFile(gw.configFile));
  t.equal((await servedCertificate(gw.port, trust)).cn, 'second');
  // Removing TLS takes a restart: the reload warns and HTTPS stays.
  delete config.server.tls;
  writeFileSync(gw.configFile, stringify(config));
  await gw.app.reload(loadConfigFile(gw.configFile));
  t.ok(
    gw.logs.some(
      (l) => l.msg === 'these keys change only on restart' && (l.keys as string[]).includes('server.tls'),
    ),
  );
  t.equal((await servedCertificate(gw.port, trust)).cn, 'second');
});

t.test('an expired or unreadable certificate at start stops the start, naming the key', async (t) => {
  await t.rejects(
    startGateway({ server: { tls: { cert: expired.cert, key: expired.key } } }),
    /server\.tls\.cert: the certificate expired/,
  );
  await t.rejects(
    startGateway({ server: { tls: { cert: path.join(pki.dir, 'missing.pem'), key: first.key } } }),
    /server\.tls\.cert: file .*missing\.pem cannot be read \(ENOENT\)/,
  );
  await t.rejects(
    startGateway({ admin: { tls: { cert: first.cert, key: second.key } } }),
    /admin\.tls\.key: does not match admin\.tls\.cert/,
  );
});
