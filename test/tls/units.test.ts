import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { subjectAltNames } from '../../src/auth/schemes/client-certificate.js';
import { Pki } from '../helpers/tls.js';
import { loadListener, loadUpstream } from '../../src/tls/material.js';
import { TICKET_PERIOD, ticketKeys, ticketSecret } from '../../src/tls/tickets.js';

t.test('subjectAltName text: quoted values stay one entry', async (t) => {
  t.same(subjectAltNames('DNS:a.example, URI:spiffe://corp/ns/x, email:A@B.c, IP Address:127.0.0.1'), [
    ['DNS', 'a.example'],
    ['URI', 'spiffe://corp/ns/x'],
    ['email', 'A@B.c'],
    ['IP Address', '127.0.0.1'],
  ]);
  // Node quotes a value holding a comma: it cannot pose as a second entry.
  t.same(subjectAltNames('DNS:"evil.example, DNS:reporter.corp.example", URI:x'), [
    ['DNS', 'evil.example, DNS:reporter.corp.example'],
    ['URI', 'x'],
  ]);
  t.same(subjectAltNames('DNS:"unterminated'), []);
  t.same(subjectAltNames(''), []);
});

t.test('ticket keys: the same for every process, new every period and with every client trust', async (t) => {
  const secret = ticketSecret();
  let now = 5 * TICKET_PERIOD + 1000;
  const a = ticketKeys(secret, () => now);
  const b = ticketKeys(Buffer.from(secret), () => now);
  t.equal(a.keys('').length, 48);
  t.same(a.keys('ca1'), b.keys('ca1'), 'two processes with one secret agree');
  t.notSame(a.keys('ca1'), a.keys('ca2'), 'new client trust, new keys');
  t.notSame(a.keys('ca:crl1'), a.keys('ca:crl2'), 'a new CRL, new keys');
  t.notSame(a.keys(''), ticketKeys(ticketSecret(), () => now).keys(''), 'another secret, other keys');
  const before = a.keys('');
  now += TICKET_PERIOD - 2000;
  t.same(a.keys(''), before, 'within the period');
  now += 2000;
  t.notSame(a.keys(''), before, 'rotated after 12 h');
  const stop = a.onRotate(() => undefined);
  stop();
});

t.test('TLS files that do not load are named by their key, never shown', async (t) => {
  const pki = new Pki();
  t.teardown(() => pki.close());
  const ca = pki.ca('units-ca');
  const good = ca.issue('u-good', { cn: 'good' });
  const later = ca.issue('u-later', { cn: 'later', startsInDays: 2 });
  const junk = path.join(pki.dir, 'junk.pem');
  writeFileSync(junk, 'not a certificate\n');
  const at = 'server.tls';
  const listener = (o: Record<string, string>) =>
    loadListener(
      { cert: good.cert, key: good.key, min_version: 'TLSv1.2', client_auth: 'none', ...o } as never,
      at,
    );
  t.throws(() => listener({ cert: junk }), /^server\.tls\.cert: is not a PEM certificate$/);
  t.throws(() => listener({ key: junk }), /^server\.tls\.key: is not a PEM private key/);
  t.throws(
    () => listener({ cert: later.cert, key: later.key }),
    /server\.tls\.cert: the certificate is not valid before/,
  );
  t.throws(
    () => listener({ client_auth: 'optional', client_ca: junk }),
    /^server\.tls\.client_ca: is not a PEM certificate$/,
  );
  t.throws(
    () => listener({ client_auth: 'optional', client_ca: ca.cert, client_crl: junk }),
    /^server\.tls: the files cannot be used together \(/,
  );
  // The client trust's digest names the CA's and the CRL's content: a reissued CRL is new trust.
  const caOnly = listener({ client_auth: 'optional', client_ca: ca.cert }).trustDigest;
  t.match(caOnly, /^[0-9a-f]{64}:$/);
  const crl = ca.crl();
  const withCrl = listener({ client_auth: 'optional', client_ca: ca.cert, client_crl: crl }).trustDigest;
  t.match(withCrl, /^[0-9a-f]{64}:[0-9a-f]{64}$/);
  t.equal(withCrl.split(':')[0], caOnly.split(':')[0]);
  const reissued = listener({
    client_auth: 'optional',
    client_ca: ca.cert,
    client_crl: ca.crl(),
  }).trustDigest;
  t.not(reissued, withCrl, 'a reissued CRL (new number, same entries) is new trust');
  t.equal(listener({ client_auth: 'none', client_ca: ca.cert }).trustDigest, '', 'no client certificates');
  t.throws(
    () => loadUpstream({ ca: junk }, 'passthrough.tls'),
    /^passthrough\.tls\.ca: is not a PEM certificate$/,
  );
  t.same(Object.keys(loadUpstream({ servername: 'svc' }, 'passthrough.tls')), ['servername']);
});
