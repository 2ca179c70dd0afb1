/**
 * The audit trail through the front door, on both stores: each status sequence of Update SSO
 * Provider (intent then success, a no-op, a failure, nothing for a 400 or a 404), a 403 recorded off
 * the request path, the trail made unwritable (503, the provider unchanged), and the metrics and
 * /readyz that say so.
 */
import { createHash } from 'node:crypto';
import { chmodSync } from 'node:fs';
import t, { type Test } from 'tap';
import { verifyTrail } from '../../src/audit/verify.js';
import { errorOf, readyz, TOKENS } from '../helpers/gateway.js';
import { metric, metricsText } from '../helpers/metrics.js';
import { holdLock, requirePostgres, sql } from '../helpers/postgres.js';
import { until } from '../helpers/wait.js';
import { auditedGateway, breakProvidersFile, type Kind, metadata, patch } from './gateway-helpers.js';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const CREATED_AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const kinds: Kind[] = ['file'];
if (await requirePostgres(t)) kinds.push('postgres');

for (const kind of kinds) {
  t.test(`${kind}: a change writes intent, then success, one commit id; then the answer`, async (t) => {
    const a = await auditedGateway(t, kind);
    const xml = metadata('https://idp.example.com/new');
    const res = await patch(
      a.gw,
      1,
      [
        { name: 'name', value: 'Okta Renamed' },
        { name: 'metadata', value: xml, filename: 'idp.xml' },
      ],
      { token: TOKENS.writer },
    );
    t.equal(res.status, 200, res.body.toString());
    const [intent, success, ...rest] = await a.entries();
    t.same(rest, [], 'two entries');
    const common = {
      actor_id: TOKENS.writer.id,
      actor_name: 'writer',
      actor_email: '',
      action: 'UpdateSSOIdentityProvider',
      request_id: res.headers.requestid,
      source_ip_address: '127.0.0.1',
    };
    const sha = createHash('sha256').update(xml).digest('hex');
    t.match(intent, {
      ...common,
      id: 1,
      status: 'intent',
      fields: {
        sso_provider_id: 1,
        id: 1,
        name: 'Okta',
        changed: ['name', 'display_name', 'idp_issuer_uri', 'idp_sso_uri', 'metadata_xml'],
        metadata_sha256: sha,
      },
    });
    t.match(success, { ...common, id: 2, status: 'success', commit_id: intent?.commit_id });
    t.same(success?.fields, {
      sso_provider_id: 1,
      id: 1,
      name: 'Okta Renamed',
      changed: ['name', 'display_name', 'idp_issuer_uri', 'idp_sso_uri', 'metadata_xml'],
      metadata_sha256: sha,
    });
    t.match(intent?.commit_id, UUID_V4);
    t.match(intent?.created_at, CREATED_AT);
    t.notMatch(JSON.stringify(await a.entries()), 'EntityDescriptor', 'never the document');
    t.match(await verifyTrail(a.items()), { ok: true, entries: 2, pending: [] });
    t.equal(await a.providerName(1), 'Okta Renamed');

    const text = await metricsText(a.gw.adminUrl);
    t.equal(metric(text, 'gateway_audit_entries_total', { status: 'intent' }), 1);
    t.equal(metric(text, 'gateway_audit_entries_total', { status: 'success' }), 1);
    t.equal(metric(text, 'gateway_audit_head_id'), 2);
    t.equal(metric(text, 'gateway_audit_write_failures_total'), 0);
    const head = a.gw.logs.filter((l) => l.msg === 'audit entry appended').at(-1);
    t.match(head, { audit_head_id: 2, audit_head_hash: success?.hash }, 'the head is logged');
    const ready = await readyz(a.gw);
    t.match(ready.body.checks.audit, kind === 'file' ? `file ${a.file}` : 'postgres audit_logs');
  });

  t.test(`${kind}: a no-op writes intent and success with changed []; a 400 or a 404 nothing`, async (t) => {
    const a = await auditedGateway(t, kind);
    const noop = await patch(a.gw, 1, [{ name: 'name', value: 'Okta' }]);
    t.equal(noop.status, 200);
    t.equal((await patch(a.gw, 1, [{ name: 'bogus', value: 'x' }])).status, 400);
    t.equal((await patch(a.gw, 999, [{ name: 'name', value: 'x' }])).status, 404);
    t.equal((await patch(a.gw, 'x', [{ name: 'name', value: 'x' }])).status, 400);
    const entries = await a.entries();
    t.same(
      entries.map((e) => [e.status, e.fields.changed]),
      [
        ['intent', ['name', 'display_name']],
        ['success', []],
      ],
    );
    t.same(entries[1]?.fields, { sso_provider_id: 1, id: 1, name: 'Okta', changed: [] });
  });

  t.test(`${kind}: a failure after the intent writes failure with the answer's message`, async (t) => {
    const a = await auditedGateway(t, kind);
    let expected: { status: number; message: string };
    if (kind === 'file') {
      breakProvidersFile(a.gw);
      expected = { status: 500, message: 'an internal error occurred' };
    } else {
      // A concurrent writer holds the provider's rows: the change waits past its deadline.
      const holder = await holdLock(
        t,
        a.url as string,
        'SELECT * FROM saml_providers WHERE sso_provider_id = 1 FOR UPDATE',
      );
      t.teardown(() => holder.query('ROLLBACK'));
      expected = { status: 504, message: 'request timed out' };
    }
    const res = await patch(a.gw, 1, [{ name: 'name', value: 'Never' }], { headers: { Prefer: 'wait=1' } });
    t.match(errorOf(res), expected);
    const entries = await a.entries();
    t.same(
      entries.map((e) => e.status),
      ['intent', 'failure'],
    );
    t.equal(entries[0]?.commit_id, entries[1]?.commit_id);
    t.match(entries[1]?.fields, { sso_provider_id: 1, id: 1, name: 'Okta', error: expected.message });
    if (kind === 'postgres') t.equal(await a.providerName(1), 'Okta', 'nothing applied');
    t.match(await verifyTrail(a.items()), { ok: true, pending: [] });
    t.equal(await scrapeOf(a, 'gateway_audit_entries_total', { status: 'failure' }), 1);
  });

  t.test(`${kind}: each 403 is recorded off the request path, its path without the query`, async (t) => {
    const a = await auditedGateway(t, kind);
    const res = await patch(a.gw, 1, [{ name: 'name', value: 'x' }], {
      token: TOKENS.reader,
      query: '?secret=hunter2',
    });
    t.equal(res.status, 403);
    await until('the refusal is written', async () => (await a.entries()).length === 1);
    const [entry] = await a.entries();
    t.match(entry, {
      actor_id: TOKENS.reader.id,
      actor_name: 'reader',
      action: 'UnauthorizedAccessAttempt',
      status: 'failure',
      request_id: res.headers.requestid,
      fields: { method: 'PATCH', path: '/api/v2/sso-providers/1', permission: 'sso_providers:write' },
    });
    t.notMatch(JSON.stringify(entry), 'hunter2');
    t.equal(await a.providerName(1), 'Okta');
  });

  t.test(`${kind}: an unwritable trail refuses the change (503) and leaves the provider`, async (t) => {
    const a = await auditedGateway(t, kind);
    t.equal((await patch(a.gw, 1, [{ name: 'name', value: 'First' }])).status, 200);
    const restore = await makeUnwritable(t, a);
    const res = await patch(a.gw, 1, [{ name: 'name', value: 'Second' }]);
    t.match(errorOf(res), { status: 503, context: 'audit', message: 'audit trail unavailable' });
    t.equal(await a.providerName(1), 'First', 'the provider is unchanged');
    t.equal(await scrapeOf(a, 'gateway_audit_write_failures_total'), 1);
    const line = a.gw.logs.find((l) => l.msg === 'request' && l.status === 503);
    t.match(line, { error_code: 'GW_AUDIT_UNAVAILABLE' });
    if (kind === 'file') {
      const ready = await readyz(a.gw);
      t.equal(ready.status, 200, 'reads still serve');
      t.match(ready.body.checks.audit, /^appends failing: file /);
    }
    await restore();
    t.equal((await patch(a.gw, 1, [{ name: 'name', value: 'Third' }])).status, 200);
    t.equal(await a.providerName(1), 'Third');
    t.match(await verifyTrail(a.items()), { ok: true, entries: 4, pending: [] });
  });
}

/** Makes `a`'s trail refuse appends; resolves with what undoes it. */
async function makeUnwritable(t: Test, a: Awaited<ReturnType<typeof auditedGateway>>) {
  if (a.kind === 'file') {
    chmodSync(a.file as string, 0o444);
    return async () => chmodSync(a.file as string, 0o644);
  }
  const url = a.url as string;
  await sql(url, 'ALTER TABLE audit_logs RENAME TO audit_logs_away');
  t.teardown(() => sql(url, 'ALTER TABLE IF EXISTS audit_logs_away RENAME TO audit_logs'));
  return async () => void (await sql(url, 'ALTER TABLE audit_logs_away RENAME TO audit_logs'));
}

async function scrapeOf(a: { gw: { adminUrl: string } }, name: string, labels: Record<string, string> = {}) {
  return metric(await metricsText(a.gw.adminUrl), name, labels);
}
