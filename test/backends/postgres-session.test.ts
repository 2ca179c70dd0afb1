/**
 * The session's bookkeeping with a scripted pool: which connections are reused and which are
 * closed, what an abort, a connection that cannot be obtained, a broken connection or a failed
 * COMMIT becomes, and the error translation. (The same paths against the real database are in
 * postgres.test.ts and postgres-refusals.test.ts.)
 */
import type { Pool } from 'pg';
import t from 'tap';
import {
  isConnectionLost,
  isPoolBusy,
  translate,
  translateConnectFailure,
} from '../../src/backends/postgres/errors.js';
import { createSession } from '../../src/backends/postgres/session.js';
import { GatewayError } from '../../src/errors.js';

/** A pool whose one connection answers each statement with `answer(text)`. */
function scripted(answer: (text: string) => Promise<unknown>, connect?: Promise<void>) {
  const releases: unknown[] = [];
  const statements: string[] = [];
  const client = {
    processID: 4242,
    query(text: string) {
      statements.push(text);
      return answer(text).then((rows) => ({ rows }));
    },
    release(arg?: unknown) {
      releases.push(arg);
    },
  };
  const pool = {
    connect: () => (connect ?? Promise.resolve()).then(() => client),
  } as unknown as Pool;
  const events: string[] = [];
  const session = createSession(pool, {
    cancel: (pid) => events.push(`cancel ${pid}`),
    succeeded: () => events.push('succeeded'),
    unreachable: () => events.push('unreachable'),
    lost: () => events.push('lost'),
  });
  return { session, releases, statements, events };
}

const never = () => new AbortController().signal;
const lost = () => Object.assign(new Error('Connection terminated unexpectedly'), {});
const sqlError = (code: string) => Object.assign(new Error(`sql ${code}`), { code });

t.test('a statement: the connection is reused after success and after an SQL error', async (t) => {
  const s = scripted(async (text) => {
    if (text === 'bad') throw sqlError('42P01');
    return [{ ok: 1 }];
  });
  t.same(await s.session.query('good', [], never()), [{ ok: 1 }]);
  await t.rejects(
    s.session.query('bad', [], never()),
    { code: '42P01' },
    'an unexpected error stays itself (500)',
  );
  t.same(s.releases, [undefined, undefined]);
  t.same(s.events, ['succeeded']);
});

t.test('a statement on a broken connection: 503, the connection closed, the loss reported', async (t) => {
  const s = scripted(async () => {
    throw lost();
  });
  await t.rejects(s.session.query('x', [], never()), { status: 503, message: 'store unavailable' });
  t.same(s.releases, [true]);
  t.same(s.events, ['lost'], 'a probe decides whether the database is away, not this request');
});

t.test('an abort while waiting for a connection gives it up; the connection goes back unused', async (t) => {
  let arrive!: () => void;
  const s = scripted(async () => [], new Promise<void>((r) => (arrive = r)));
  const controller = new AbortController();
  const waiting = s.session.query('x', [], controller.signal);
  const reason = new Error('deadline');
  controller.abort(reason);
  await t.rejects(waiting, reason);
  arrive();
  await new Promise((r) => setImmediate(r));
  t.same(s.releases, [undefined], 'released once, unused');
  t.same(s.statements, []);
});

/** A session on a pool whose `connect()` always fails with `err`; `events` records the hooks. */
function refusing(err: unknown) {
  const pool = { connect: () => Promise.reject(err) };
  const events: string[] = [];
  const session = createSession(pool as unknown as Pool, {
    cancel: () => undefined,
    succeeded: () => undefined,
    unreachable: () => events.push('unreachable'),
    lost: () => events.push('lost'),
  });
  return { session, events };
}

t.test('no connection obtained, whatever the reason: 503 and the database marked away', async (t) => {
  const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });
  const refusals = [
    withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'),
    withCode('database "gw" is not currently accepting connections', '55000'),
    withCode('too many connections for role "gw"', '53300'),
    withCode('the database system is starting up', '57P03'),
    withCode('terminating connection due to administrator command', '57P01'),
    withCode('terminating connection because of crash of another server process', '57P02'),
    withCode('could not establish connection', '08001'),
    withCode('password authentication failed for user "gw"', '28P01'),
    withCode('role "gw" is not permitted to log in', '28000'),
    withCode('database "gw" does not exist', '3D000'),
    withCode('self-signed certificate', 'DEPTH_ZERO_SELF_SIGNED_CERT'),
    new Error('The server does not support SSL connections'),
    new Error('Connection terminated due to connection timeout'),
  ];
  for (const err of refusals) {
    const { session, events } = refusing(err);
    const seen = await session.query('x', [], never()).catch((e: unknown) => e);
    t.match(seen, { status: 503, context: 'store', message: 'store unavailable', cause: err }, err.message);
    await t.rejects(
      session.transaction(never(), async () => 1),
      { status: 503, message: 'store unavailable' },
    );
    t.same(events, ['unreachable', 'unreachable'], `${err.message}: the database is away`);
  }
});

t.test('a busy pool is 503 but not away; an aborted wait is the abort', async (t) => {
  const busy = refusing(new Error('timeout exceeded when trying to connect'));
  await t.rejects(busy.session.query('x', [], never()), { status: 503, message: 'store unavailable' });
  t.same(busy.events, [], 'busy is not down');

  const controller = new AbortController();
  const reason = new GatewayError(504, 'request', 'request timed out');
  controller.abort(reason);
  const refused = refusing(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }));
  await t.rejects(refused.session.query('x', [], controller.signal), reason);
  t.same(refused.events, [], 'an abort says nothing of the database');
});

t.test('55000 inside a transaction is an ordinary statement error: 500, rolled back, reused', async (t) => {
  const s = scripted(async (text) => {
    if (text === 'LOCK') throw sqlError('55000');
    return [];
  });
  await t.rejects(
    s.session.transaction(never(), (query) => query('LOCK')),
    { code: '55000' },
    'not translated: the envelope writer makes it a 500',
  );
  t.same(s.statements, ['BEGIN', 'LOCK', 'ROLLBACK']);
  t.same(s.releases, [undefined], 'the connection goes back to the pool');
  t.notOk(s.events.includes('unreachable') || s.events.includes('lost'), 'the database is not away');
});

t.test('a transaction whose work fails is rolled back and its connection reused', async (t) => {
  const s = scripted(async () => []);
  const failure = new GatewayError(400, 'x', 'refused by the work');
  await t.rejects(
    s.session.transaction(never(), async (query) => {
      await query('SELECT 1');
      throw failure;
    }),
    failure,
  );
  t.same(s.statements, ['BEGIN', 'SELECT 1', 'ROLLBACK']);
  t.same(s.releases, [undefined]);
});

t.test('a failed ROLLBACK closes the connection', async (t) => {
  const s = scripted(async (text) => {
    if (text === 'ROLLBACK' || text === 'bad') throw sqlError('XX000');
    return [];
  });
  await t.rejects(
    s.session.transaction(never(), (query) => query('bad')),
    { code: 'XX000' },
  );
  t.same(s.releases, [true]);
});

t.test(
  'an abort during the work cancels the statement on the server and closes the connection',
  async (t) => {
    const controller = new AbortController();
    const s = scripted((text) => (text === 'slow' ? new Promise(() => undefined) : Promise.resolve([])));
    const reason = new Error('deadline');
    const running = s.session.transaction(controller.signal, (query) => query('slow'));
    await new Promise((r) => setImmediate(r));
    controller.abort(reason);
    await t.rejects(running, reason);
    t.same(s.statements, ['BEGIN', 'slow'], 'no ROLLBACK on the connection being cancelled');
    t.same(s.releases, [true]);
    t.ok(s.events.includes('cancel 4242'), 'the server process is cancelled');
  },
);

t.test('an abort after the work but before COMMIT applies nothing', async (t) => {
  const controller = new AbortController();
  const reason = new Error('deadline');
  const s = scripted(async () => []);
  await t.rejects(
    s.session.transaction(controller.signal, async () => {
      controller.abort(reason);
      return 'done';
    }),
    reason,
  );
  t.notOk(s.statements.includes('COMMIT'));
  t.same(s.releases, [true]);
});

t.test('a COMMIT that fails is a 503 (outcome unknown), even after the deadline', async (t) => {
  const controller = new AbortController();
  const s = scripted(async (text) => {
    if (text === 'COMMIT') {
      controller.abort(new Error('deadline'));
      throw lost();
    }
    return [];
  });
  await t.rejects(
    s.session.transaction(controller.signal, async () => 'done'),
    { status: 503, message: 'store unavailable' },
  );
  t.same(s.releases, [true]);
  t.ok(s.events.includes('lost'));
});

t.test('the error translation', async (t) => {
  const signal = never();
  t.ok(isConnectionLost(sqlError('08006')), 'SQLSTATE class 08');
  t.ok(isConnectionLost(sqlError('57P01')), 'admin shutdown (a terminated backend)');
  t.ok(isConnectionLost(Object.assign(new Error('x'), { code: 'ECONNRESET' })), 'socket reset');
  t.ok(isConnectionLost(new Error('Connection terminated unexpectedly')));
  t.ok(isConnectionLost(new Error('Client has encountered a connection error and is not queryable')));
  t.notOk(isConnectionLost('a string'));
  t.notOk(isConnectionLost(null));
  t.notOk(isConnectionLost(sqlError('23505')));
  t.notOk(isConnectionLost(sqlError('55000')), '55000 in a session is not a lost connection');
  t.ok(isPoolBusy(new Error('timeout exceeded when trying to connect')));
  t.notOk(isPoolBusy(sqlError('53300')));
  t.match(
    translateConnectFailure(sqlError('55000'), signal),
    { status: 503, message: 'store unavailable' },
    '55000 at connect',
  );
  t.match(translate(sqlError('08006'), signal), { status: 503, message: 'store unavailable' });
  const inSession = sqlError('55000');
  t.equal(translate(inSession, signal), inSession, '55000 in a session stays itself (500)');
  t.match(
    translate(sqlError('57014'), signal),
    { status: 503, message: 'store unavailable' },
    'statement timeout',
  );
  t.match(
    translate(sqlError('55P03'), signal),
    { status: 503, message: 'store unavailable' },
    'lock timeout',
  );
  const other = sqlError('23505');
  t.equal(translate(other, signal), other, 'anything else stays itself');
  t.equal(translate('odd', signal), 'odd');
  const c = new AbortController();
  c.abort(new GatewayError(504, 'request', 'request timed out'));
  t.equal(translate(sqlError('57014'), c.signal), c.signal.reason, 'a cancel after an abort is the abort');
});
