import t from 'tap';
import { subjectAltNames } from '../../src/auth/client-certificate.js';
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

t.test('ticket keys: the same for every process, new every period and with every client CA', async (t) => {
  const secret = ticketSecret();
  let now = 5 * TICKET_PERIOD + 1000;
  const a = ticketKeys(secret, () => now);
  const b = ticketKeys(Buffer.from(secret), () => now);
  t.equal(a.keys('').length, 48);
  t.same(a.keys('ca1'), b.keys('ca1'), 'two processes with one secret agree');
  t.notSame(a.keys('ca1'), a.keys('ca2'), 'a new client CA, new keys');
  t.notSame(a.keys(''), ticketKeys(ticketSecret(), () => now).keys(''), 'another secret, other keys');
  const before = a.keys('');
  now += TICKET_PERIOD - 2000;
  t.same(a.keys(''), before, 'within the period');
  now += 2000;
  t.notSame(a.keys(''), before, 'rotated after 12 h');
  const stop = a.onRotate(() => undefined);
  stop();
});
