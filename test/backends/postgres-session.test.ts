/**
 * The session's bookkeeping with a scripted pool: which connections are reused and which are
 * closed, what an abort, a broken connection or a failed COMMIT becomes, and the error translation.
 * (The same paths against the real database are in postgres.test.ts.)
 */
import type { Pool } from 'pg';
import t from 'tap';
import { isConnectionError, translate } from '../../src/backends/postgres/errors.js';
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

t.test('a statement on a broken connection: 503, the connection closed, the store marked down', async (t) => {
  const s = scripted(async () => {
    throw lost();
  });
  await t.rejects(s.session.query('x', [], never()), { status: 503, message: 'store unavailable' });
  t.same(s.releases, [true]);
  t.same(s.events, ['unreachable']);
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

t.test('a pool that cannot connect: 503 and marked down', async (t) => {
  const pool = {
    connect: () => Promise.reject(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' })),
  };
  const events: string[] = [];
  const session = createSession(pool as unknown as Pool, {
    cancel: () => undefined,
    succeeded: () => undefined,
    unreachable: () => events.push('unreachable'),
  });
  await t.rejects(session.query('x', [], never()), { status: 503, message: 'store unavailable' });
  await t.rejects(
    session.transaction(never(), async () => 1),
    { status: 503, message: 'store unavailable' },
  );
  t.same(events, ['unreachable', 'unreachable']);
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
  t.ok(s.events.includes('unreachable'));
});

t.test('the error translation', async (t) => {
  const signal = never();
  t.ok(isConnectionError(Object.assign(new Error('x'), { code: '08006' })), 'SQLSTATE class 08');
  t.ok(isConnectionError(Object.assign(new Error('x'), { code: '57P01' })), 'admin shutdown');
  t.ok(isConnectionError(new Error('Connection terminated due to connection timeout')));
  t.notOk(isConnectionError('a string'));
  t.notOk(isConnectionError(null));
  t.notOk(isConnectionError(sqlError('23505')));
  t.match(
    translate(new Error('timeout exceeded when trying to connect'), signal),
    { status: 503, message: 'store unavailable' },
    'pool busy',
  );
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
