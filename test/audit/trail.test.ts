/**
 * The trail the SSO-provider operation calls, on each real store: intent then success or failure
 * under one commit id, an intent left without outcome, refusals (at most 60 per identity a minute),
 * each entry counted and its head logged and exported.
 */
import t from 'tap';
import { createMetrics } from '../../src/observability/metrics.js';
import type { AuditEntry } from '../../src/audit/entry.js';
import { type AuditTrail, createAuditTrail, type Refusal, type UpdateStart } from '../../src/audit/trail.js';
import type { AuditStore } from '../../src/audit/store.js';
import { verifyTrail } from '../../src/audit/verify.js';
import { createLogger } from '../../src/observability/logger.js';
import { metric } from '../helpers/metrics.js';
import { fileUnderTest, manualClock, storesUnderTest } from './helpers.js';

const START: UpdateStart = {
  actor: { id: 'c0ffee00-0000-4000-8000-000000000001', name: 'alice', email: 'alice@example.com' },
  requestId: '5a1e0000-0000-4000-8000-00000000000a',
  sourceIp: '192.0.2.7',
  ssoProviderId: 3,
  provider: { id: 31, name: 'okta' },
  requested: ['name', 'display_name', 'idp_issuer_uri', 'idp_sso_uri', 'metadata_xml'],
  metadataSha256: 'ab'.repeat(32),
};

function refusal(principal: string, i = 0): Refusal {
  return {
    actor: { id: principal, name: principal, email: '' },
    requestId: `5a1e0000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    sourceIp: '198.51.100.1',
    principal,
    method: 'PATCH',
    path: `/api/v2/sso-providers/${i}?secret=1`,
    permission: 'sso_providers:write',
  };
}

/** A trail on `store` whose log lines and metrics the test reads. */
function observed(store: AuditStore, options: { refused?: boolean; now?: () => number } = {}) {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger('info', { write: (l: string) => void lines.push(JSON.parse(l)) });
  const { registry, audit: auditMetrics } = createMetrics();
  const trail: AuditTrail = createAuditTrail(store, {
    logger,
    metrics: auditMetrics,
    ...options,
  });
  const metricOf = async (name: string, labels: Record<string, string> = {}) =>
    metric(await registry.metrics(), name, labels);
  return { trail, lines, metric: metricOf };
}

async function entries(store: AuditStore): Promise<AuditEntry[]> {
  const out: AuditEntry[] = [];
  for await (const item of store.walk()) out.push(item.entry as AuditEntry);
  return out;
}

t.test('intent then success share one commit id; each head is logged and exported', async (t) => {
  for (const { kind, store } of await storesUnderTest(t)) {
    const { trail, lines, metric } = observed(store);
    const update = trail.update(START);
    await update.intent();
    await update.succeeded({ provider: { id: 31, name: 'okta-2' }, changed: ['name', 'display_name'] });
    const [intent, success] = await entries(store);
    t.match(
      intent,
      { id: 1, status: 'intent', action: 'UpdateSSOIdentityProvider', commit_id: update.commitId },
      kind,
    );
    t.match(success, { id: 2, status: 'success', commit_id: update.commitId }, kind);
    t.match(
      update.commitId,
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      'a uuid v4',
    );
    t.same(intent?.fields, {
      sso_provider_id: 3,
      id: 31,
      name: 'okta',
      changed: START.requested,
      metadata_sha256: 'ab'.repeat(32),
    });
    t.same(success?.fields, {
      sso_provider_id: 3,
      id: 31,
      name: 'okta-2',
      changed: ['name', 'display_name'],
      metadata_sha256: 'ab'.repeat(32),
    });
    t.match(intent, {
      actor_id: START.actor.id,
      actor_name: 'alice',
      actor_email: 'alice@example.com',
      request_id: START.requestId,
      source_ip_address: '192.0.2.7',
    });
    t.match(intent?.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const heads = lines.filter((l) => l.msg === 'audit entry appended');
    t.same(
      heads.map((l) => [l.audit_head_id, l.audit_head_hash, l.audit_status]),
      [
        [1, intent?.hash, 'intent'],
        [2, success?.hash, 'success'],
      ],
      `${kind}: the head of each append is logged`,
    );
    t.equal(await metric('gateway_audit_head_id'), 2);
    t.equal(
      await metric('gateway_audit_entries_total', { action: 'UpdateSSOIdentityProvider', status: 'intent' }),
      1,
    );
    t.equal(
      await metric('gateway_audit_entries_total', { action: 'UpdateSSOIdentityProvider', status: 'success' }),
      1,
    );
    t.equal(await metric('gateway_audit_write_failures_total'), 0);
    t.same((await verifyTrail(store.walk())).pending, [], 'no intent without outcome');
  }
});

t.test('a no-op change still writes intent and success (changed: [])', async (t) => {
  for (const { kind, store } of await storesUnderTest(t)) {
    const update = observed(store).trail.update({ ...START, requested: ['name', 'display_name'] });
    await update.intent();
    await update.succeeded({ provider: START.provider, changed: [] });
    const logged = await entries(store);
    t.same(
      logged.map((e) => [e.status, e.fields.changed]),
      [
        ['intent', ['name', 'display_name']],
        ['success', []],
      ],
      kind,
    );
  }
});

t.test(
  'intent then failure carries the error; an intent alone is listed by verify, which still holds',
  async (t) => {
    for (const { kind, store } of await storesUnderTest(t)) {
      const { trail, metric } = observed(store);
      const failing = trail.update(START);
      await failing.intent();
      await failing.failed('store unavailable');
      const cut = trail.update(START);
      await cut.intent();
      const logged = await entries(store);
      t.same(
        logged.map((e) => e.status),
        ['intent', 'failure', 'intent'],
        kind,
      );
      t.equal(logged[1]?.fields.error, 'store unavailable');
      t.equal(logged[1]?.commit_id, failing.commitId);
      const report = await verifyTrail(store.walk());
      t.ok(report.ok, `${kind}: the chain holds`);
      t.same(
        report.pending.map((p) => [p.commit_id, p.id]),
        [[cut.commitId, 3]],
      );
      t.equal(await metric('gateway_audit_entries_total', { status: 'failure' }), 1);
    }
  },
);

t.test('a refusal is one failure entry, its path without the query; 60 per identity a minute', async (t) => {
  const clock = manualClock();
  const { store } = await fileUnderTest(t, clock.now);
  const { trail, metric } = observed(store, { now: clock.now });
  for (let i = 0; i < 61; i++) trail.refused(refusal('token:a', i));
  trail.refused(refusal('token:b'));
  await trail.settled();
  let logged = await entries(store);
  t.equal(logged.length, 61, '60 of one identity, 1 of another');
  t.match(logged[0], { action: 'UnauthorizedAccessAttempt', status: 'failure', actor_id: 'token:a' });
  t.same(logged[0]?.fields, {
    method: 'PATCH',
    path: '/api/v2/sso-providers/0',
    permission: 'sso_providers:write',
  });
  t.equal(new Set(logged.map((e) => e.commit_id)).size, 61, 'each refusal its own commit id');
  t.equal(await metric('gateway_audit_refusals_dropped_total'), 1);
  t.equal(await metric('gateway_audit_entries_total', { action: 'UnauthorizedAccessAttempt' }), 61);

  clock.tick(30_000);
  trail.refused(refusal('token:a'));
  await trail.settled();
  t.equal(await metric('gateway_audit_refusals_dropped_total'), 2, 'still within the minute');
  clock.tick(30_001);
  trail.refused(refusal('token:a'));
  await trail.settled();
  logged = await entries(store);
  t.equal(logged.length, 62, 'a minute after the first, one more is recorded');
});

t.test('refused: false records no refusal', async (t) => {
  const { store } = await fileUnderTest(t);
  const { trail } = observed(store, { refused: false });
  trail.refused(refusal('token:a'));
  await trail.settled();
  t.same(await entries(store), []);
});
