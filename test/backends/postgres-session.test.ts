/**
 * The session on a real pool against the real PostgreSQL: which connections are reused and which
 * are closed (seen in `pg_stat_activity`), what an abort, a connection that cannot be obtained, a
 * lost connection or a failed COMMIT becomes, and the error translation. Only a failed ROLLBACK,
 * which a real server cannot be made to answer, runs on a scripted pool.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import pg, { type Pool } from 'pg';
import t, { type Test } from 'tap';
import {
  isConnectionLost,
  isPoolBusy,
  translate,
  translateConnectFailure,
} from '../../src/postgres/errors.js';
import { createSession } from '../../src/backends/postgres/session.js';
import { GatewayError } from '../../src/errors.js';
import {
  ADMIN_URL,
  createDatabase,
  createRole,
  createSchema,
  holdLock,
  requirePostgres,
  sql,
  withDatabase,
  withPort,
  withUser,
} from '../helpers/postgres.js';
import { until } from '../helpers/wait.js';

const never = () => new AbortController().signal;
const sqlError = (code: string) => Object.assign(new Error(`sql ${code}`), { code });
const STORE = { status: 503, context: 'store', message: 'store unavailable' };

interface Backend {
  pid: number;
  state: string;
  query: string;
  wait_event_type: string | null;
}

/** A session on a real pool at `url`; `events` records the hooks, and a cancel is made for real. */
function sessionOn(t: Test, url: string, over: pg.PoolConfig = {}) {
  const name = `session-test-${randomUUID().slice(0, 8)}`;
  const pool = new pg.Pool({ connectionString: url, max: 1, application_name: name, ...over });
  // A connection cut from outside must not crash the test (the gateway does the same).
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  t.teardown(() => pool.end());
  const events: string[] = [];
  const session = createSession(pool, {
    cancel(pid) {
      events.push(`cancel ${pid}`);
      void sql(ADMIN_URL, 'SELECT pg_cancel_backend($1)', [pid]);
    },
    succeeded: () => undefined,
    unreachable: () => events.push('unreachable'),
    lost: () => events.push('lost'),
  });
  /** The server process of the connection the next statement runs on. */
  const pid = async () =>
    (await session.query<{ pid: number }>('SELECT pg_backend_pid() AS pid', [], never()))[0]!.pid;
  /** This pool's connections, as the server sees them. */
  const backends = () =>
    sql<Backend>(
      ADMIN_URL,
      'SELECT pid, state, query, wait_event_type FROM pg_stat_activity WHERE application_name = $1',
      [name],
    );
  /** Resolves with the backend once one runs a statement matching `pattern` (waiting for a lock). */
  const running = async (pattern: RegExp, locked = false) => {
    let found: Backend | undefined;
    await until(`a session runs ${pattern}`, async () => {
      found = (await backends()).find(
        (b) => b.state === 'active' && pattern.test(b.query) && (!locked || b.wait_event_type === 'Lock'),
      );
      return found !== undefined;
    });
    return found!;
  };
  return { pool, session, events, pid, backends, running };
}

/** A pool whose one connection answers each statement with `answer(text)`: for what no server does. */
function scripted(answer: (text: string) => Promise<unknown>) {
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
  const pool = { connect: () => Promise.resolve(client) } as unknown as Pool;
  const session = createSession(pool, {
    cancel: () => undefined,
    succeeded: () => undefined,
    unreachable: () => undefined,
    lost: () => undefined,
  });
  return { session, releases, statements };
}

t.test('a failed ROLLBACK closes the connection', async (t) => {
  const s = scripted(async (text) => {
    if (text === 'ROLLBACK' || text === 'bad') throw sqlError('XX000');
    return [];
  });
  await t.rejects(
    s.session.transaction(never(), (query) => query('bad')),
    { code: 'XX000' },
  );
  t.same(s.statements, ['BEGIN', 'bad', 'ROLLBACK']);
  t.same(s.releases, [true], 'closed, not reused');
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
  t.match(translateConnectFailure(sqlError('55000'), signal), STORE, '55000 at connect');
  t.match(translate(sqlError('08006'), signal), STORE);
  const inSession = sqlError('55000');
  t.equal(translate(inSession, signal), inSession, '55000 in a session stays itself (500)');
  t.match(translate(sqlError('57014'), signal), STORE, 'statement timeout');
  t.match(translate(sqlError('55P03'), signal), STORE, 'lock timeout');
  const other = sqlError('23505');
  t.equal(translate(other, signal), other, 'anything else stays itself');
  t.equal(translate('odd', signal), 'odd');
  const c = new AbortController();
  c.abort(new GatewayError('GW_DEADLINE_EXCEEDED', 'request', 'request timed out'));
  t.equal(translate(sqlError('57014'), c.signal), c.signal.reason, 'a cancel after an abort is the abort');
});

/** A port on 127.0.0.1 where nothing listens. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A TCP peer that accepts connections and never says a word; closed when `t` ends. */
async function silentPeer(t: Test): Promise<number> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return (server.address() as { port: number }).port;
}

if (await requirePostgres(t)) {
  const database = await createDatabase(t);

  t.test('a statement: the connection is reused after success and after an SQL error', async (t) => {
    const s = sessionOn(t, await createSchema(t, database));
    const first = await s.pid();
    await t.rejects(
      s.session.query('SELECT * FROM no_such_table', [], never()),
      { code: '42P01' },
      'an unexpected error stays itself (500)',
    );
    t.equal(await s.pid(), first, 'the same connection serves again');
    t.same(
      (await s.backends()).map((b) => b.pid),
      [first],
      'one connection, still open',
    );
    t.same(s.events, [], 'the database is not away');
  });

  t.test('a statement whose connection is cut: 503, the connection closed, the loss reported', async (t) => {
    const s = sessionOn(t, await createSchema(t, database));
    const slow = s.session.query('SELECT pg_sleep(60)', [], never()).catch((e: unknown) => e);
    const victim = await s.running(/pg_sleep/);
    await sql(ADMIN_URL, 'SELECT pg_terminate_backend($1)', [victim.pid]);
    t.match(await slow, STORE);
    t.same(s.events, ['lost'], 'a probe decides whether the database is away, not this request');
    const next = await s.pid();
    t.not(next, victim.pid, 'the next statement runs on a new connection');
    await until('the pool opens its one connection', async () => (await s.backends()).length === 1);
    t.same(
      (await s.backends()).map((b) => b.pid),
      [next],
      'the cut one is gone',
    );
  });

  t.test(
    'an abort while waiting for a connection gives it up; the connection goes back unused',
    async (t) => {
      const s = sessionOn(t, await createSchema(t, database));
      let holding!: (pid: number) => void;
      const held = new Promise<number>((resolve) => (holding = resolve));
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const transaction = s.session.transaction(never(), async (query) => {
        holding((await query<{ pid: number }>('SELECT pg_backend_pid() AS pid'))[0]!.pid);
        await gate;
      });
      const pid = await held;
      const controller = new AbortController();
      const reason = new Error('deadline');
      const waiting = s.session.query('SELECT 1', [], controller.signal);
      await until('a query waits for a connection', () => s.pool.waitingCount === 1);
      controller.abort(reason);
      await t.rejects(waiting, reason, 'given up at once');
      release();
      await transaction;
      await until(
        'the connection is back in the pool',
        () => s.pool.waitingCount === 0 && s.pool.idleCount === 1,
      );
      t.match(
        await s.backends(),
        [{ pid, state: 'idle', query: 'COMMIT' }],
        'back in the pool unused: its last statement is the COMMIT',
      );
      t.equal(await s.pid(), pid, 'and reused');
    },
  );

  t.test('no connection obtained, whatever the reason: 503 and the database marked away', async (t) => {
    const noLogin = `gw_nologin_${randomUUID().slice(0, 8)}`;
    await sql(ADMIN_URL, `CREATE ROLE ${noLogin} NOLOGIN`);
    t.teardown(() => sql(ADMIN_URL, `DROP ROLE IF EXISTS ${noLogin}`));
    const limited = await createRole(t);
    await sql(ADMIN_URL, `ALTER ROLE ${limited} CONNECTION LIMIT 0`);
    const closed = await createDatabase(t);
    const closedName = new URL(closed).pathname.slice(1);
    await sql(ADMIN_URL, `ALTER DATABASE ${closedName} ALLOW_CONNECTIONS false`);
    t.teardown(() => sql(ADMIN_URL, `ALTER DATABASE ${closedName} ALLOW_CONNECTIONS true`));

    const refusals: Array<[string, string, object, pg.PoolConfig?]> = [
      ['nothing listens', withPort(ADMIN_URL, await closedPort()), { code: 'ECONNREFUSED' }],
      [
        'no such database',
        withDatabase(ADMIN_URL, `gw_missing_${randomUUID().slice(0, 8)}`),
        { code: '3D000' },
      ],
      ['a role that may not log in', withUser(ADMIN_URL, noLogin), { code: '28000' }],
      ['a role at its connection limit', withUser(ADMIN_URL, limited), { code: '53300' }],
      ['a database closed to connections', closed, { code: '55000' }],
      [
        'a peer that never answers the start-up',
        withPort(ADMIN_URL, await silentPeer(t)),
        { message: /connection timeout/ },
        { connectionTimeoutMillis: 200 },
      ],
    ];
    for (const [what, url, cause, over] of refusals) {
      const s = sessionOn(t, url, over);
      const seen = await s.session.query('SELECT 1', [], never()).catch((e: unknown) => e);
      t.match(seen, { ...STORE, cause }, what);
      await t.rejects(
        s.session.transaction(never(), async () => 1),
        STORE,
      );
      t.same(s.events, ['unreachable', 'unreachable'], `${what}: the database is away`);
    }
  });

  t.test('a busy pool is 503 but not away; an aborted wait is the abort', async (t) => {
    const s = sessionOn(t, await createSchema(t, database));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let holding!: () => void;
    const held = new Promise<void>((resolve) => (holding = resolve));
    const transaction = s.session.transaction(never(), async (query) => {
      await query('SELECT 1');
      holding();
      await gate;
    });
    await held;
    // Short only now: the one connection is open, so a slow machine cannot time its opening out.
    s.pool.options.connectionTimeoutMillis = 100;
    await t.rejects(s.session.query('SELECT 1', [], never()), STORE, 'no connection freed in time');
    t.same(s.events, [], 'busy is not down');
    release();
    await transaction;

    const refused = sessionOn(t, withPort(ADMIN_URL, await closedPort()));
    const controller = new AbortController();
    const reason = new GatewayError('GW_DEADLINE_EXCEEDED', 'request', 'request timed out');
    controller.abort(reason);
    await t.rejects(refused.session.query('SELECT 1', [], controller.signal), reason);
    t.same(refused.events, [], 'an abort says nothing of the database');
  });

  t.test('a transaction', async (t) => {
    const url = await createSchema(t, database);
    await sql(
      url,
      `CREATE TABLE items (id int);
       CREATE SEQUENCE never_used;
       CREATE TABLE once (id int, CONSTRAINT once_id UNIQUE (id) DEFERRABLE INITIALLY DEFERRED);
       CREATE FUNCTION wait_for_the_test() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN PERFORM pg_advisory_xact_lock(4242); RETURN NULL; END $$;
       CREATE TABLE slow (id int);
       CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON slow DEFERRABLE INITIALLY DEFERRED
         FOR EACH ROW EXECUTE FUNCTION wait_for_the_test();`,
    );
    const count = async (table: string) =>
      (await sql<{ n: number }>(url, `SELECT count(*)::int AS n FROM ${table}`))[0]!.n;
    const s = sessionOn(t, url);
    /** Another session holds the lock a row of `slow` waits for at COMMIT, until `unlock()`. */
    const lockCommits = async () => {
      const holder = new pg.Client({ connectionString: url });
      holder.on('error', () => undefined);
      await holder.connect();
      await holder.query('SELECT pg_advisory_lock(4242)');
      return () => holder.end();
    };

    t.test('55000 inside it is an ordinary statement error: 500, rolled back, reused', async (t) => {
      const pid = await s.pid();
      await t.rejects(
        s.session.transaction(never(), async (query) => {
          await query('INSERT INTO items VALUES (1)');
          await query("SELECT currval('never_used')");
        }),
        { code: '55000' },
        'not translated: the envelope writer makes it a 500',
      );
      t.equal(await count('items'), 0, 'rolled back');
      t.match(await s.backends(), [{ pid, state: 'idle', query: 'ROLLBACK' }], 'the connection stays');
      t.equal(await s.pid(), pid, 'and is reused');
      t.same(s.events, [], 'the database is not away');
    });

    t.test('work that fails is rolled back and its connection reused', async (t) => {
      const pid = await s.pid();
      const failure = new GatewayError('GW_ID_MALFORMED', 'x', 'refused by the work');
      await t.rejects(
        s.session.transaction(never(), async (query) => {
          await query('INSERT INTO items VALUES (2)');
          throw failure;
        }),
        failure,
      );
      t.equal(await count('items'), 0, 'rolled back');
      t.match(await s.backends(), [{ pid, state: 'idle', query: 'ROLLBACK' }]);
      t.equal(await s.pid(), pid);
    });

    t.test('an abort during the work cancels the statement and closes the connection', async (t) => {
      const pid = await s.pid();
      const controller = new AbortController();
      const reason = new Error('deadline');
      const work = s.session.transaction(controller.signal, async (query) => {
        await query('INSERT INTO items VALUES (3)');
        await query('SELECT pg_sleep(60)');
      });
      t.equal((await s.running(/pg_sleep/)).pid, pid);
      controller.abort(reason);
      await t.rejects(work, reason, 'rejects at once with the abort reason');
      t.same(s.events, [`cancel ${pid}`], 'the server process is cancelled');
      t.equal(s.pool.totalCount, 0, 'the connection is closed, not reused');
      await until('the server session ends', async () => (await s.backends()).length === 0);
      t.equal(await count('items'), 0, 'nothing applied');
      t.not(await s.pid(), pid, 'a new connection serves the next statement');
      s.events.length = 0;
    });

    t.test('an abort after the work but before COMMIT applies nothing', async (t) => {
      const pid = await s.pid();
      const controller = new AbortController();
      const reason = new Error('deadline');
      await t.rejects(
        s.session.transaction(controller.signal, async (query) => {
          await query('INSERT INTO items VALUES (4)');
          controller.abort(reason);
          return 'done';
        }),
        reason,
      );
      t.equal(await count('items'), 0, 'nothing applied');
      t.equal(s.pool.totalCount, 0, 'the connection is closed');
      await until('the server session ends', async () => (await s.backends()).every((b) => b.pid !== pid));
    });

    t.test('a COMMIT refused by a deferred constraint: the error (500), nothing applied', async (t) => {
      const pid = await s.pid();
      const failed = await s.session
        .transaction(never(), async (query) => {
          await query('INSERT INTO once VALUES (1), (1)');
          return 'done';
        })
        .catch((e: unknown) => e);
      t.match(failed, { code: '23505', constraint: 'once_id' }, 'not translated: a 500');
      t.equal(await count('once'), 0, 'nothing applied');
      t.equal(s.pool.totalCount, 0, 'the connection is closed');
      await until('the server session ends', async () => (await s.backends()).every((b) => b.pid !== pid));
      t.same(s.events, [], 'the database is not away');
    });

    t.test('an abort during COMMIT does not stop it: the result stands and is returned', async (t) => {
      const unlock = await lockCommits();
      const controller = new AbortController();
      const work = s.session.transaction(controller.signal, async (query) => {
        await query('INSERT INTO slow VALUES (1)');
        return 'done';
      });
      const committing = await s.running(/^COMMIT/, true); // it waits for the test's lock
      controller.abort(new Error('deadline'));
      await unlock();
      t.equal(await work, 'done');
      t.equal(await count('slow'), 1, 'applied');
      t.same(s.events, [], 'no cancel');
      t.match(await s.backends(), [{ pid: committing.pid, state: 'idle' }], 'the connection stays');
    });

    t.test(
      'a COMMIT whose connection is cut is a 503 (outcome unknown), even after the deadline',
      async (t) => {
        const unlock = await lockCommits();
        t.teardown(unlock);
        const controller = new AbortController();
        const work = s.session
          .transaction(controller.signal, async (query) => {
            await query('INSERT INTO slow VALUES (2)');
            return 'done';
          })
          .catch((e: unknown) => e);
        const committing = await s.running(/^COMMIT/, true);
        controller.abort(new Error('deadline'));
        await sql(ADMIN_URL, 'SELECT pg_terminate_backend($1)', [committing.pid]);
        t.match(await work, STORE);
        t.same(s.events, ['lost']);
        t.equal(await count('slow'), 1, 'this time it was not applied');
        t.equal(s.pool.totalCount, 0, 'the connection is closed');
      },
    );
  });

  t.test('errors the server sends, translated', async (t) => {
    const url = await createSchema(t, database);
    await sql(url, 'CREATE TABLE keyed (id int PRIMARY KEY); INSERT INTO keyed VALUES (1)');
    const s = sessionOn(t, url, { statement_timeout: 100, lock_timeout: 100 } as pg.PoolConfig);
    await t.rejects(
      s.session.query('INSERT INTO keyed VALUES (1)', [], never()),
      { code: '23505' },
      'a unique violation stays itself (500)',
    );
    await t.rejects(s.session.query('SELECT pg_sleep(60)', [], never()), STORE, 'statement_timeout: 503');
    const holder = await holdLock(t, url, 'LOCK TABLE keyed');
    await t.rejects(
      s.session.transaction(never(), (query) => query('SELECT * FROM keyed')),
      STORE,
      'lock_timeout: 503',
    );
    await holder.query('ROLLBACK');
    t.same(s.events, [], 'none of these is a database away');
    t.same(
      await s.session.query('SELECT id FROM keyed', [], never()),
      [{ id: 1 }],
      'the session still serves',
    );
  });
}
