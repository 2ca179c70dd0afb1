import t, { type Test } from 'tap';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { type Pair, Pki, replaceFile, sessionRequest, trustFiles as liveTrust } from '../helpers/tls.js';
import { until } from '../helpers/wait.js';

// Each case changes a trust file and waits for the gateway's file checks (every 2 s).
t.setTimeout(120_000);

const CHECKSUM = '/api/v2/collectors/sharphound/latest/checksum';
const VERSIONS = ['TLSv1.2', 'TLSv1.3'] as const;
type Version = (typeof VERSIONS)[number];
const pki = new Pki();
t.teardown(() => pki.close());
const ca = pki.ca('resume-ca');
const other = pki.ca('resume-other');
const server = ca.issue('server', { cn: 'gateway', san: ['DNS:localhost', 'IP:127.0.0.1'] });
const good = ca.issue('good', { cn: 'good-client', usage: 'client' });

const trustFiles = () => liveTrust(pki, ca);

async function start(
  t: Test,
  clientAuth: 'optional' | 'require',
  files = trustFiles(),
  tls: Record<string, unknown> = {},
): Promise<TestGateway> {
  const gw = await startGateway({
    server: {
      tls: {
        cert: server.cert,
        key: server.key,
        client_auth: clientAuth,
        client_ca: files.ca,
        client_crl: files.crl,
        ...tls,
      },
    },
    auth: {
      client_certificates: [
        { match: { cn: 'bh-client' }, subject: 'certuser', permissions: ['*'] },
        { match: { cn: 'good-client' }, subject: 'good', permissions: ['*'] },
      ],
    },
  });
  t.teardown(() => gw.close());
  return gw;
}

const as = (pair: Pair, maxVersion?: Version) => ({
  ca: ca.cert,
  cert: pair.cert,
  key: pair.key,
  target: CHECKSUM,
  ...(maxVersion && { maxVersion }),
});

/** A session of `pair` for each TLS version, each checked to resume before anything changes. */
async function sessionsOf(t: Test, gw: TestGateway, pair: Pair): Promise<Map<Version, Buffer>> {
  const sessions = new Map<Version, Buffer>();
  for (const version of VERSIONS) {
    const first = await sessionRequest(gw.port, as(pair, version));
    t.equal(first.status, 200, `${version}: a full handshake, 200`);
    const again = await sessionRequest(gw.port, { ...as(pair, version), session: first.session });
    t.ok(again.reused, `${version}: the ticket resumes while nothing changed`);
    t.equal(again.status, 200);
    sessions.set(version, first.session as Buffer);
  }
  return sessions;
}

/** The reason the gateway logged for the request answered in `text`. */
const reasonOf = (gw: TestGateway, text: string) => {
  const id = /\r\nrequestid: (\S+)/i.exec(text)?.[1];
  return gw.logs.find((l) => l.msg === 'request' && l.request_id === id)?.auth_failure;
};

t.test('a revoked certificate: its TLS 1.2 and 1.3 tickets no longer resume', async (t) => {
  const files = trustFiles();
  const gw = await start(t, 'optional', files);
  const victim = ca.issue('victim', { cn: 'bh-client', usage: 'client' });
  const sessions = await sessionsOf(t, gw, victim);
  replaceFile(files.crl, ca.revoke(victim));
  // The new CRL is in force once a full handshake is judged by it.
  await until('the new CRL in force', async () => (await sessionRequest(gw.port, as(victim))).status === 401);
  for (const [version, session] of sessions) {
    const resumed = await sessionRequest(gw.port, { ...as(victim, version), session });
    t.notOk(resumed.reused, `${version}: the session made before the CRL changed does not resume`);
    t.equal(resumed.status, 401, `${version}: the full handshake finds the certificate revoked`);
    t.equal(reasonOf(gw, resumed.text), 'untrusted_certificate');
  }
});

t.test('a new client CA: tickets made under the old one no longer resume', async (t) => {
  const files = trustFiles();
  const gw = await start(t, 'optional', files);
  const sessions = await sessionsOf(t, gw, good);
  replaceFile(files.ca, other.cert);
  await until('the new CA in force', async () => (await sessionRequest(gw.port, as(good))).status === 401);
  for (const [version, session] of sessions) {
    const resumed = await sessionRequest(gw.port, { ...as(good, version), session });
    t.notOk(resumed.reused, `${version}: no resumption under the new CA`);
    t.equal(resumed.status, 401, `${version}: the certificate is judged against the new CA`);
  }
});

t.test('require: a refused resumption falls back to one full handshake', async (t) => {
  const files = trustFiles();
  const gw = await start(t, 'require', files);
  const sessions = await sessionsOf(t, gw, good);
  // A reissued CRL revoking nothing new: still new trust.
  replaceFile(files.crl, ca.crl());
  await until('the CRL reloaded', () =>
    gw.logs.some((l) => l.msg === 'tls reloaded' && l.tls === 'server.tls'),
  );
  for (const [version, session] of sessions) {
    const resumed = await sessionRequest(gw.port, { ...as(good, version), session });
    t.notOk(resumed.reused, `${version}: the old ticket is refused`);
    t.equal(resumed.status, 200, `${version}: the full handshake verifies the certificate again`);
    const next = await sessionRequest(gw.port, { ...as(good, version), session: resumed.session });
    t.ok(next.reused, `${version}: the session of that handshake resumes`);
    t.equal(next.status, 200);
  }
});
