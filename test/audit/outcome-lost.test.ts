/**
 * A success entry that cannot be written after the commit point (contract §12): the change stands,
 * the answer is 500 `audit outcome not recorded`, the loss is counted and logged, and `gateway audit
 * verify` lists the intent without outcome. On a file trail (made read-only the moment the providers
 * file is renamed into place) and on a PostgreSQL trail in a database of its own (which refuses
 * success rows).
 */
import { chmodSync, watch } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { runAudit } from '../../src/cli/audit.js';
import { errorOf } from '../helpers/gateway.js';
import { scrape } from '../helpers/metrics.js';
import { createDatabase, requirePostgres, runCli, sql } from '../helpers/postgres.js';
import { auditedGateway, patch } from './gateway-helpers.js';

t.test(
  'file: the trail made read-only at the commit point: 500, the change stands, verify lists it',
  async (t) => {
    const a = await auditedGateway(t, 'file');
    const trail = a.file as string;
    // The providers file's rename is the commit point: the trail refuses appends from then on.
    const watcher = watch(a.gw.dataDir, (_event, name) => {
      if (name === 'sso-providers.json') chmodSync(trail, 0o444);
    });
    t.teardown(() => watcher.close());
    const res = await patch(a.gw, 1, [{ name: 'name', value: 'Committed' }]);
    watcher.close();
    t.match(errorOf(res), { status: 500, context: 'audit', message: 'audit outcome not recorded' });
    t.equal(await a.providerName(1), 'Committed', 'the change stands');
    t.equal(await scrape(a.gw.adminUrl, 'gateway_audit_write_failures_total'), 1);
    t.match(
      a.gw.logs.find((l) => l.msg === 'request' && l.status === 500),
      { error_code: 'GW_AUDIT_OUTCOME_LOST' },
    );
    t.ok(
      a.gw.logs.some((l) => l.msg === 'sso provider updated'),
      'the change has its log line',
    );
    const [intent, ...rest] = await a.entries();
    t.same(rest, []);
    const verified = await runCli(runAudit, ['verify', '--config', a.gw.configFile]);
    t.equal(verified.code, 0, verified.stderr);
    t.match(verified.stdout, `intents without outcome (1):\n  ${intent?.commit_id}`);
    chmodSync(trail, 0o644);
    t.equal(path.basename(trail), 'sso-providers.json.audit.jsonl');
  },
);

if (await requirePostgres(t)) {
  t.test('postgres of its own: success rows refused: 500, the change stands, verify lists it', async (t) => {
    const url = await createDatabase(t);
    const a = await auditedGateway(t, 'file', { audit: { store: { type: 'postgres', url } } });
    await sql(
      url,
      `CREATE FUNCTION no_success() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN IF NEW.status = 'success' THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END $$;
       CREATE TRIGGER no_success BEFORE INSERT ON audit_logs FOR EACH ROW EXECUTE FUNCTION no_success();`,
    );
    const res = await patch(a.gw, 1, [{ name: 'name', value: 'Committed' }]);
    t.match(errorOf(res), { status: 500, message: 'audit outcome not recorded' });
    t.equal(await a.providerName(1), 'Committed', 'the change stands');
    const rows = await sql<{ status: string; commit_id: string }>(
      url,
      'SELECT status, commit_id FROM audit_logs ORDER BY id',
    );
    t.same(
      rows.map((r) => r.status),
      ['intent'],
    );
    const verified = await runCli(runAudit, ['verify', '--config', a.gw.configFile]);
    t.equal(verified.code, 0, verified.stderr);
    t.match(verified.stdout, `intents without outcome (1):\n  ${rows[0]?.commit_id}`);
  });
}
