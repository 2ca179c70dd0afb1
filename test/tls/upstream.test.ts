import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import t, { type Test } from 'tap';
import { call, request, startGateway, type TestGateway } from '../helpers/gateway.js';
import { Pki, SecretMount } from '../helpers/tls.js';
import { metric, metricsText, series } from '../helpers/metrics.js';
import { until } from '../helpers/wait.js';

t.setTimeout(120_000);

const MEMBER = '/api/v2/asset-group-tags/1/members/101';
const OTHER = '/api/v2/available-domains';
const pki = new Pki();
t.teardown(() => pki.close());
const serviceCa = pki.ca('service-ca');
const gatewayCa = pki.ca('gateway-clients-ca');
const service = serviceCa.issue('service', { cn: 'service', san: ['DNS:bh.internal'] });
const client1 = gatewayCa.issue('gw-1', { cn: 'gateway-1', usage: 'client' });
const client2 = gatewayCa.issue('gw-2', { cn: 'gateway-2', usage: 'client' });
const strangerCa = pki.ca('stranger-ca');
const stranger = strangerCa.issue('gw-x', { cn: 'gateway-x', usage: 'client' });

/** The service: HTTPS, and it requires a client certificate from the gateway's CA. */
async function startService(t: Test): Promise<{ url: string; server: Server }> {
  const server = createServer(
    {
      cert: readFileSync(service.cert),
      key: readFileSync(service.key),
      ca: readFileSync(gatewayCa.cert),
      requestCert: true,
      rejectUnauthorized: true,
    },
    (req, res) => {
      req.resume();
      const cn = (req.socket as TLSSocket).getPeerCertificate().subject.CN;
      // One connection per request, so that each shows the certificate the gateway has now.
      res.writeHead(200, { 'Content-Type': 'application/json', Connection: 'close' });
      res.end(JSON.stringify({ data: { cn, path: req.url } }));
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.close();
    server.closeAllConnections();
  });
  return { url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

async function start(t: Test, tls: Record<string, unknown> | undefined): Promise<TestGateway> {
  const { url } = await startService(t);
  const upstream = { url, auth: { type: 'bearer', token: 'gateway-token' }, ...(tls && { tls }) };
  const gw = await startGateway({
    backends: { asset_group_tags: { type: 'upstream', path: undefined, ...upstream } },
    passthrough: upstream,
  });
  t.teardown(() => gw.close());
  return gw;
}

t.test('mTLS to the service: a private CA trusted, a client certificate presented', async (t) => {
  const mount = new SecretMount(path.join(pki.dir, 'client-mount'));
  mount.mount(client1);
  const gw = await start(t, {
    ca: serviceCa.cert,
    cert: mount.cert,
    key: mount.key,
    servername: 'bh.internal',
  });
  const backend = await call(gw, { method: 'GET', target: MEMBER });
  t.equal(backend.status, 200);
  t.same(backend.json().data, { cn: 'gateway-1', path: MEMBER });
  const relayed = await call(gw, { method: 'GET', target: OTHER });
  t.equal(relayed.status, 200);
  t.same(relayed.json().data, { cn: 'gateway-1', path: OTHER });
  // The front door's public requests (contract §11) go to the same service on their own pool.
  const open = await request(gw, { method: 'GET', target: '/api/v2/spec' });
  t.equal(open.status, 200);
  t.same(open.json().data, { cn: 'gateway-1', path: '/api/v2/spec' });

  // The client certificate is reloaded like the listener's.
  mount.mount(client2);
  await until(
    'the backend gets the new client certificate',
    async () => (await call(gw, { method: 'GET', target: MEMBER })).json().data?.cn === 'gateway-2',
  );
  await until(
    'the pass-through gets the new client certificate',
    async () => (await call(gw, { method: 'GET', target: OTHER })).json().data?.cn === 'gateway-2',
  );
  await until(
    'the public requests get the new client certificate',
    async () =>
      (await request(gw, { method: 'GET', target: '/api/v2/spec' })).json().data?.cn === 'gateway-2',
  );
  t.ok(gw.logs.some((l) => l.msg === 'tls reloaded' && l.tls === 'backends.asset_group_tags.tls'));
  t.ok(gw.logs.some((l) => l.msg === 'tls reloaded' && l.tls === 'passthrough.tls'));
  const metrics = await metricsText(gw.adminUrl);
  // The backend, the pass-through's relay and the public requests' pool each reload their own.
  t.equal(metric(metrics, 'gateway_tls_reloads_total', { result: 'ok' }), 3);
  t.same(series(metrics, 'gateway_tls_certificate_not_after_timestamp_seconds'), [], 'no listener has TLS');
});

t.test('without the right client certificate or CA the service is unreachable (502)', async (t) => {
  const gw = await start(t, {
    ca: serviceCa.cert,
    cert: stranger.cert,
    key: stranger.key,
    servername: 'bh.internal',
  });
  t.equal((await call(gw, { method: 'GET', target: MEMBER })).status, 502);
  t.equal((await call(gw, { method: 'GET', target: OTHER })).status, 502);
  const untrusted = await start(t, { cert: client1.cert, key: client1.key, servername: 'bh.internal' });
  t.equal((await call(untrusted, { method: 'GET', target: MEMBER })).status, 502);
  t.equal((await call(untrusted, { method: 'GET', target: OTHER })).status, 502);
});

t.test('an upstream certificate that does not load stops the start, naming the key', async (t) => {
  await t.rejects(
    startGateway({
      passthrough: {
        url: 'https://127.0.0.1:1',
        auth: { type: 'bearer', token: 'x' },
        tls: { cert: client1.cert, key: client2.key },
      },
    }),
    /passthrough\.tls\.key: does not match passthrough\.tls\.cert/,
  );
  await t.rejects(
    startGateway({
      backends: {
        asset_group_tags: {
          type: 'upstream',
          path: undefined,
          url: 'https://127.0.0.1:1',
          auth: { type: 'bearer', token: 'x' },
          tls: { ca: path.join(pki.dir, 'nope.pem') },
        },
      },
    }),
    /backends\.asset_group_tags\.tls\.ca: file .* cannot be read \(ENOENT\)/,
  );
});
