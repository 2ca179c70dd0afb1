import t, { type Test } from 'tap';
import { signed, startGateway, TOKENS, type TestGateway } from '../helpers/gateway.js';
import { type ClientTls, httpsRequest, Pki, servedCertificate } from '../helpers/tls.js';
import { metric, metricsText } from '../helpers/metrics.js';

t.setTimeout(120_000);

const CHECKSUM = '/api/v2/collectors/sharphound/latest/checksum';
const MEMBER = '/api/v2/asset-group-tags/1/members/101';
const pki = new Pki();
t.teardown(() => pki.close());
const ca = pki.ca('clients-ca');
const other = pki.ca('other-ca');
const server = ca.issue('server', { cn: 'gateway', san: ['DNS:localhost', 'IP:127.0.0.1'] });
const spiffe = ca.issue('spiffe', {
  cn: 'etl',
  usage: 'client',
  san: ['URI:spiffe://corp/ns/etl/sa/bh-sync'],
});
const reporter = ca.issue('reporter', { cn: 'rep', usage: 'client', san: ['DNS:Reporter.Corp.Example'] });
const mailer = ca.issue('mailer', { cn: 'mail', usage: 'client', san: ['email:Ops@Corp.Example'] });
const byName = ca.issue('by-name', { cn: 'legacy-client', usage: 'client' });
const stranger = ca.issue('stranger', { cn: 'stranger', usage: 'client', san: ['DNS:unknown.example'] });
const spiffeCase = ca.issue('spiffe-case', {
  cn: 'x',
  usage: 'client',
  san: ['URI:SPIFFE://corp/ns/etl/sa/bh-sync'],
});
const foreign = other.issue('foreign', {
  cn: 'legacy-client',
  usage: 'client',
  san: ['DNS:reporter.corp.example'],
});
const revoked = ca.issue('revoked', { cn: 'revoked', usage: 'client', san: ['DNS:reporter.corp.example'] });
const crl = ca.revoke(revoked);

const ENTRIES = [
  { match: { uri: 'spiffe://corp/ns/etl/sa/bh-sync' }, subject: 'bh-sync', permissions: ['collectors:read'] },
  { match: { dns: 'reporter.corp.example' }, subject: 'reporter', permissions: ['*'] },
  { match: { email: 'ops@corp.example' }, subject: 'ops', permissions: ['asset_group_tags:read'] },
  { match: { cn: 'legacy-client' }, subject: 'legacy', permissions: [] },
];

async function start(t: Test, clientAuth: 'optional' | 'require'): Promise<TestGateway> {
  const gw = await startGateway({
    server: {
      tls: {
        cert: server.cert,
        key: server.key,
        client_auth: clientAuth,
        client_ca: ca.cert,
        client_crl: crl,
      },
    },
    auth: { client_certificates: ENTRIES },
  });
  t.teardown(() => gw.close());
  return gw;
}

const as = (pair: { cert: string; key: string } | undefined): ClientTls => ({
  ca: ca.cert,
  ...(pair && { cert: pair.cert, key: pair.key }),
});

/** The request's log line, by its RequestID. */
const lineOf = (gw: TestGateway, id: unknown) =>
  gw.logs.find((l) => l.msg === 'request' && l.request_id === id);

t.test('optional: a verified certificate matching an entry is that identity', async (t) => {
  const gw = await start(t, 'optional');
  const res = await httpsRequest(gw.port, { ...as(spiffe), target: CHECKSUM });
  t.equal(res.status, 200);
  const line = lineOf(gw, res.headers.requestid);
  t.match(line, { auth_scheme: 'client_certificate', subject: 'bh-sync' });
  t.notOk(JSON.stringify(line).includes('BEGIN CERTIFICATE'));
  // The entry's permissions apply.
  const denied = await httpsRequest(gw.port, { ...as(spiffe), target: MEMBER });
  t.equal(denied.status, 403);
  // dns and email: exact, case-insensitive; cn: the subject's common name.
  t.equal((await httpsRequest(gw.port, { ...as(reporter), target: MEMBER })).status, 200);
  t.equal((await httpsRequest(gw.port, { ...as(mailer), target: MEMBER })).status, 200);
  const legacy = await httpsRequest(gw.port, { ...as(byName), target: CHECKSUM });
  t.equal(legacy.status, 403, 'legacy holds no permission');
  t.match(lineOf(gw, legacy.headers.requestid), { subject: 'legacy' });
});

t.test('optional: refusals and their reasons', async (t) => {
  const gw = await start(t, 'optional');
  const reasons = async (pair: { cert: string; key: string } | undefined) => {
    const res = await httpsRequest(gw.port, { ...as(pair), target: CHECKSUM });
    t.equal(res.status, 401);
    t.equal(res.json().errors[0].message, 'not authenticated');
    t.ok(res.headers['www-authenticate']);
    return lineOf(gw, res.headers.requestid)?.auth_failure;
  };
  t.equal(await reasons(stranger), 'unknown_certificate');
  t.equal(await reasons(spiffeCase), 'unknown_certificate', 'uri is matched case-sensitively');
  t.equal(await reasons(foreign), 'untrusted_certificate');
  t.equal(await reasons(revoked), 'untrusted_certificate', 'a certificate on the CRL is not verified');
  t.equal(await reasons(undefined), 'missing');
  const metrics = await metricsText(gw.adminUrl);
  const failures = (reason: string) =>
    metric(metrics, 'gateway_auth_failures_total', { scheme: 'client_certificate', reason });
  t.equal(failures('unknown_certificate'), 2);
  t.equal(failures('untrusted_certificate'), 2);
});

t.test('with an Authorization header, that scheme decides', async (t) => {
  const gw = await start(t, 'optional');
  // A reporter certificate (every permission) with the reader's signature: the reader it is.
  const res = await httpsRequest(gw.port, {
    ...as(reporter),
    target: '/api/v2/sso-providers/1',
    method: 'PATCH',
    headers: signed({ method: 'PATCH', target: '/api/v2/sso-providers/1', token: TOKENS.reader }),
  });
  t.equal(res.status, 403);
  t.match(lineOf(gw, res.headers.requestid), { auth_scheme: 'signature', subject: 'reader' });
  const bad = await httpsRequest(gw.port, {
    ...as(reporter),
    target: CHECKSUM,
    headers: { Authorization: 'Bearer not-a-token' },
  });
  t.equal(bad.status, 401);
  t.equal(bad.json().errors[0].message, 'Token Authorization failed.');
});

t.test('require: the handshake needs a valid certificate', async (t) => {
  const gw = await start(t, 'require');
  t.equal((await httpsRequest(gw.port, { ...as(spiffe), target: CHECKSUM })).status, 200);
  await t.rejects(httpsRequest(gw.port, { ...as(undefined), target: CHECKSUM }));
  await t.rejects(httpsRequest(gw.port, { ...as(foreign), target: CHECKSUM }));
  await t.rejects(httpsRequest(gw.port, { ...as(revoked), target: CHECKSUM }));
  t.equal((await servedCertificate(gw.port, as(reporter))).cn, 'gateway');
});
