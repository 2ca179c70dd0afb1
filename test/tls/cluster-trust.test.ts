import { rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import t, { type Test } from 'tap';
import { stringify } from 'yaml';
import { baseConfig, copySampleData, merge } from '../helpers/gateway.js';
import { type ListeningGateway, startGatewayProcess, stopGatewayProcess } from '../helpers/process.js';
import { type Pair, Pki, replaceFile, sessionRequest, TlsConnection, trustFiles } from '../helpers/tls.js';

// A primary and two workers, each loading its certificates (several seconds on a loaded machine).
t.setTimeout(240_000);

const CHECKSUM = '/api/v2/collectors/sharphound/latest/checksum';
const VERSIONS = ['TLSv1.2', 'TLSv1.3'] as const;
type Version = (typeof VERSIONS)[number];
const pki = new Pki();
t.teardown(() => pki.close());
const ca = pki.ca('cluster-trust-ca');
const other = pki.ca('cluster-trust-other');
const server = ca.issue('server', { cn: 'gateway', san: ['DNS:localhost', 'IP:127.0.0.1'] });
const victim = ca.issue('victim', { cn: 'bh-client', usage: 'client' });
const good = ca.issue('good', { cn: 'good-client', usage: 'client' });

async function startCluster(t: Test, files: { ca: string; crl: string }): Promise<ListeningGateway> {
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
  const config = merge(baseConfig(), {
    server: {
      workers: 2,
      keep_alive_timeout: '1h',
      tls: {
        cert: server.cert,
        key: server.key,
        client_auth: 'optional',
        client_ca: files.ca,
        client_crl: files.crl,
      },
    },
    auth: {
      client_certificates: [
        { match: { cn: 'bh-client' }, subject: 'certuser', permissions: ['*'] },
        { match: { cn: 'good-client' }, subject: 'good', permissions: ['*'] },
      ],
    },
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
  return gw;
}

const as = (pair: Pair, maxVersion: Version, session?: Buffer) => ({
  ca: ca.cert,
  cert: pair.cert,
  key: pair.key,
  target: CHECKSUM,
  maxVersion,
  ...(session && { session }),
});

/** Four connections offering `session`: whether each resumed, its status, and the workers that answered. */
async function offer(gw: ListeningGateway, pair: Pair, version: Version, session: Buffer) {
  const answers = [];
  for (let i = 0; i < 4; i++) {
    const answer = await sessionRequest(gw.port, as(pair, version, session));
    const id = /\r\nrequestid: (\S+)/i.exec(answer.text)?.[1];
    const line = await gw.waitFor((l) => l.msg === 'request' && l.request_id === id);
    answers.push({ reused: answer.reused, status: answer.status, worker: line.worker });
  }
  return {
    reused: answers.map((a) => a.reused),
    statuses: answers.map((a) => a.status),
    workers: new Set(answers.map((a) => a.worker)).size,
  };
}

/** A session of `pair` per TLS version, checked to resume on both workers. */
async function sessionsOf(t: Test, gw: ListeningGateway, pair: Pair): Promise<Map<Version, Buffer>> {
  const sessions = new Map<Version, Buffer>();
  for (const version of VERSIONS) {
    const { session, status } = await sessionRequest(gw.port, as(pair, version));
    t.equal(status, 200);
    const before = await offer(gw, pair, version, session as Buffer);
    t.same(before.reused, [true, true, true, true], `${version}: resumes while nothing changed`);
    t.equal(before.workers, 2, `${version}: on both workers`);
    sessions.set(version, session as Buffer);
  }
  return sessions;
}

const reloads = (gw: ListeningGateway, n: number) =>
  gw.waitForCount((l) => l.msg === 'tls reloaded' && l.tls === 'server.tls', n);

t.test('workers: after a CRL or CA change no worker resumes a session made before it', async (t) => {
  const files = trustFiles(pki, ca);
  const gw = await startCluster(t, files);
  const sessions = await sessionsOf(t, gw, victim);
  const open = await TlsConnection.open(gw.port, { ...as(good, 'TLSv1.3') });
  t.equal((await open.get(CHECKSUM)).status, 200, 'a kept-alive connection on one of the workers');

  replaceFile(files.crl, ca.revoke(victim));
  await reloads(gw, 2);
  for (const [version, session] of sessions) {
    const after = await offer(gw, victim, version, session);
    t.same(after.reused, [false, false, false, false], `${version}: no worker resumes it after the CRL`);
    t.same(after.statuses, [401, 401, 401, 401], `${version}: the revoked certificate is refused`);
  }
  t.equal((await open.get(CHECKSUM)).status, 0, 'the kept-alive connection was closed');

  const goodSessions = await sessionsOf(t, gw, good);
  replaceFile(files.ca, other.cert);
  await reloads(gw, 4);
  for (const [version, session] of goodSessions) {
    const after = await offer(gw, good, version, session);
    t.same(after.reused, [false, false, false, false], `${version}: no worker resumes it after the CA`);
    t.same(after.statuses, [401, 401, 401, 401], `${version}: judged against the new CA`);
  }
});
