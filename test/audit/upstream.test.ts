/**
 * The audit trail of changes made through an upstream service (an `audit.store` configured beside an
 * upstream `sso_providers` backend): `success` for a 2xx, `failure` for another answer or a service
 * that could not be reached, and no outcome when the outcome is unknown (the request went out and no
 * answer came back in time).
 */
import path from 'node:path';
import t from 'tap';
import type { AuditEntry } from '../../src/audit/entry.js';
import { readFileTrail } from '../../src/audit/file-read.js';
import { verifyTrail } from '../../src/audit/verify.js';
import { errorOf, startGateway } from '../helpers/gateway.js';
import { startUpstream, upstreamBackend } from '../helpers/upstream.js';
import { patch } from './gateway-helpers.js';

t.test('through an upstream: success for a 2xx, failure for a refusal, nothing when unknown', async (t) => {
  const stub = await startUpstream();
  t.teardown(() => stub.close());
  const trail = path.join(t.testdir(), 'audit.jsonl');
  const gw = await startGateway({
    backends: { sso_providers: upstreamBackend(stub) },
    audit: { store: { type: 'file', path: trail } },
  });
  t.teardown(() => gw.close());
  const entries = async () => {
    const out: AuditEntry[] = [];
    for await (const item of readFileTrail(trail)) out.push(item.entry as AuditEntry);
    return out;
  };

  stub.respond = (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end('{"data":{"id":1,"name":"renamed"}}');
  };
  t.equal((await patch(gw, 1, [{ name: 'name', value: 'renamed' }])).status, 200);
  stub.respond = (_req, res) => {
    res.writeHead(404, { 'Content-Type': 'application/json' });
    res.end('{"http_status":404}');
  };
  t.equal((await patch(gw, 5, [{ name: 'name', value: 'x' }])).status, 404);
  stub.respond = () => undefined; // never answers
  const timedOut = await patch(gw, 1, [{ name: 'name', value: 'y' }], { headers: { Prefer: 'wait=1' } });
  t.equal(timedOut.status, 504);
  await stub.close();
  const unreachable = await patch(gw, 1, [{ name: 'name', value: 'z' }]);
  t.match(errorOf(unreachable), { status: 502 });

  const all = await entries();
  t.same(
    all.map((e) => [e.fields.sso_provider_id, e.status, e.fields.error]),
    [
      [1, 'intent', undefined],
      [1, 'success', undefined],
      [5, 'intent', undefined],
      [5, 'failure', 'the service answered 404'],
      [1, 'intent', undefined],
      [1, 'intent', undefined],
      [1, 'failure', errorOf(unreachable).message],
    ],
  );
  t.same(all[1]?.fields, { sso_provider_id: 1, changed: ['name', 'display_name'] }, 'the form`s fields');
  const report = await verifyTrail(readFileTrail(trail));
  t.match(report, { ok: true, pending: [{ commit_id: all[4]?.commit_id }] }, 'the 504 is listed');
});
