import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { ConfigError, parseConfig } from '../../src/config/load.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { Pki, sessionRequest } from '../helpers/tls.js';
import { until } from '../helpers/wait.js';

t.setTimeout(60_000);

const CHECKSUM = '/api/v2/collectors/sharphound/latest/checksum';
const VERSIONS = ['TLSv1.2', 'TLSv1.3'] as const;
const pki = new Pki();
t.teardown(() => pki.close());
const ca = pki.ca('tickets-ca');
const server = ca.issue('server', { cn: 'gateway', san: ['DNS:localhost', 'IP:127.0.0.1'] });
const good = ca.issue('good', { cn: 'good-client', usage: 'client' });

async function start(t: Test, tls: Record<string, unknown> = {}): Promise<TestGateway> {
  const gw = await startGateway({
    server: {
      tls: { cert: server.cert, key: server.key, client_auth: 'optional', client_ca: ca.cert, ...tls },
    },
    auth: { client_certificates: [{ match: { cn: 'good-client' }, subject: 'good', permissions: ['*'] }] },
  });
  t.teardown(() => gw.close());
  return gw;
}

const as = (maxVersion: (typeof VERSIONS)[number]) => ({
  ca: ca.cert,
  cert: good.cert,
  key: good.key,
  target: CHECKSUM,
  maxVersion,
});

/** What OpenSSL reads in a client's saved session: the ticket's lifetime hint, if it holds a ticket. */
function lifetimeHint(session: Buffer): number | undefined {
  const file = path.join(mkdtempSync(path.join(pki.dir, 'session-')), 'session.der');
  writeFileSync(file, session);
  const text = execFileSync('openssl', ['sess_id', '-inform', 'DER', '-in', file, '-noout', '-text'], {
    encoding: 'utf8',
  });
  const hint = /TLS session ticket lifetime hint: (\d+)/.exec(text)?.[1];
  return hint === undefined ? undefined : Number(hint);
}

t.test('TLS 1.2 resumes by ticket only: a session id offered gets a full handshake', async (t) => {
  const gw = await start(t);
  const first = await sessionRequest(gw.port, { ...as('TLSv1.2'), noTicket: true });
  t.equal(first.status, 200);
  t.equal(lifetimeHint(first.session as Buffer), undefined, 'the session holds no ticket');
  const offered = await sessionRequest(gw.port, {
    ...as('TLSv1.2'),
    noTicket: true,
    session: first.session,
  });
  t.notOk(offered.reused, 'the session id is not resumed');
  t.equal(offered.status, 200);
});

t.test('tickets live at most server.tls.session_timeout (5m by default)', async (t) => {
  const gw = await start(t);
  for (const version of VERSIONS) {
    const { session } = await sessionRequest(gw.port, as(version));
    t.equal(lifetimeHint(session as Buffer), 300, `${version}: a ticket says it lives 300 s`);
  }
  const short = await start(t, { session_timeout: '1s' });
  for (const version of VERSIONS) {
    const { session } = await sessionRequest(short.port, as(version));
    t.equal(lifetimeHint(session as Buffer), 1, `${version}: a ticket says it lives 1 s`);
  }
  // A TLS 1.2 client offers its ticket whatever its age: the gateway refuses it once too old.
  const { session } = await sessionRequest(short.port, as('TLSv1.2'));
  await until('the ticket too old to resume', async () => {
    const offered = await sessionRequest(short.port, { ...as('TLSv1.2'), session });
    return !offered.reused && offered.status === 200;
  });
});

t.test('server.tls.session_timeout is a duration from 1s to 7 days', async (t) => {
  const config = (timeout: string) =>
    `server: { tls: { cert: c.pem, key: k.pem, session_timeout: ${timeout} } }\n` +
    'backends:\n  collectors: { type: local, path: c }\n' +
    '  sso_providers: { type: local, path: s.json }\n  asset_group_tags: { type: local, path: a.json }\n';
  t.equal(parseConfig(config('10m'), '/base').server.tls?.session_timeout, 600_000);
  const problems = (timeout: string) => {
    try {
      parseConfig(config(timeout), '/base');
    } catch (err) {
      if (err instanceof ConfigError) return err.problems.join();
      throw err;
    }
    return '';
  };
  t.match(problems('0'), /server\.tls\.session_timeout: duration 0 is out of range: must be from 1s to 168h/);
  t.match(problems('8d'), /server\.tls\.session_timeout: invalid duration "8d"/);
  t.match(problems('200h'), /server\.tls\.session_timeout: duration "200h" is out of range/);
});
