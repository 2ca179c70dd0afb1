/**
 * Explaining a signature mismatch (contract §3): the 401 carries a second envelope error saying what
 * the gateway signed, so a client author sees which part differs; the query appears there only, never
 * in a log line; `auth.signature.explain_mismatch: false` turns it off.
 */
import { createHash } from 'node:crypto';
import t, { type Test } from 'tap';
import { multipart, request, signed, startGateway, TOKENS } from '../helpers/gateway.js';
import { until } from '../helpers/wait.js';

const MEMBER = '/api/v2/asset-group-tags/1/members/101';
const PATCH = '/api/v2/sso-providers/1';
const MISMATCH =
  'unable to validate request signature for client: digest validation failed: signature digest mismatch';
const EMPTY_SHA256 = createHash('sha256').update('').digest('hex');

async function gateway(t: Test, over: Record<string, unknown> = {}) {
  const gw = await startGateway(over);
  t.teardown(() => gw.close());
  return gw;
}

t.test('a client that leaves the query out of what it signs is shown what the gateway signed', async (t) => {
  const gw = await gateway(t);
  const target = `${MEMBER}?include=secret-query-value&x=1`;
  // What the service's Python SDK and its C# example do: sign the path only.
  const headers = signed({ method: 'GET', target: MEMBER });
  const res = await request(gw, { method: 'GET', target, headers });
  t.equal(res.status, 401);
  t.same(res.json().errors, [
    { context: 'header:Signature', message: MISMATCH },
    {
      context: 'signature',
      message: `signed: GET ${target} | hour ${headers.RequestDate!.slice(0, 13)} | body 0 bytes, sha256 ${EMPTY_SHA256}`,
    },
  ]);
  t.equal(res.json().http_status, 401);
  await until('the request is logged', () => gw.logs.some((l) => l.request_id === res.headers.requestid));
  const text = JSON.stringify(gw.logs);
  t.match(text, /"auth_failure":"digest_mismatch"/, 'the refusal is logged');
  t.notMatch(text, /secret-query-value/, 'the query never reaches a log line');
  t.notMatch(text, new RegExp(headers.Signature!.replace(/[+/=]/g, '.')), 'nor the signature');
});

t.test('the body is named by its length and SHA-256, a spooled one too', async (t) => {
  const gw = await gateway(t, { server: { body_memory_threshold: 1024 } });
  for (const size of [10, 100 * 1024]) {
    const form = multipart([{ name: 'name', value: 'x'.repeat(size) }]);
    const headers = signed({ method: 'PATCH', target: PATCH, body: 'what the client meant to send' });
    const res = await request(gw, {
      method: 'PATCH',
      target: PATCH,
      body: form.body,
      headers: { ...headers, 'Content-Type': form.contentType },
    });
    t.equal(res.status, 401);
    const sha = createHash('sha256').update(form.body).digest('hex');
    t.equal(
      res.json().errors[1].message,
      `signed: PATCH ${PATCH} | hour ${headers.RequestDate!.slice(0, 13)} | body ${form.body.length} bytes, sha256 ${sha}`,
      `${form.body.length} bytes`,
    );
  }
});

t.test('explain_mismatch: false leaves the explanation out', async (t) => {
  const gw = await gateway(t, { auth: { signature: { explain_mismatch: false } } });
  const headers = signed({ method: 'GET', target: MEMBER, token: TOKENS.reader });
  const res = await request(gw, { method: 'GET', target: `${MEMBER}?x=1`, headers });
  t.equal(res.status, 401);
  t.same(res.json().errors, [{ context: 'header:Signature', message: MISMATCH }]);
});

t.test('other refusals carry no explanation', async (t) => {
  const gw = await gateway(t);
  const headers = signed({ method: 'GET', target: MEMBER, date: '2020-01-01T10:00:00Z' });
  const res = await request(gw, { method: 'GET', target: MEMBER, headers });
  t.equal(res.status, 401, 'clock skew');
  t.equal(res.json().errors.length, 1);
});
