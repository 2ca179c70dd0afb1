/**
 * The keys of an upstream with several targets: what is refused, with the key's path, and the
 * defaults an operator gets.
 */
import t from 'tap';
import { z } from 'zod';
import { httpUrl } from '../../src/config/leaves.js';
import { targetsFields, targetUrls, withTargetChecks } from '../../src/config/upstream-targets.js';
import { targetSettings } from '../../src/upstream/targets.js';

const shape = withTargetChecks(z.strictObject({ url: httpUrl().optional(), ...targetsFields }));

/** The problems of `value`, as `path: message`. */
function problems(value: unknown): string[] {
  const result = shape.safeParse(value);
  if (result.success) return [];
  return result.error.issues.map((i) => `${i.path.map(String).join('.')}: ${i.message}`);
}

const A = 'http://bh-1:8080';
const B = 'http://bh-2:8080';

t.test('bad input is refused with the key of each problem', async (t) => {
  t.same(problems({ targets: [] }), ['targets: must list at least one target URL']);
  t.same(problems({ url: A, targets: [A, B] }), [
    'targets: must not be set with url (one target is the same as url)',
  ]);
  t.same(problems({}), ['url: is required (or targets, a list of URLs)']);
  t.same(problems({ targets: [A, 'https://bh-2:8443'] }), [
    'targets.1: must use the same scheme as targets[0] (http)',
  ]);
  t.same(problems({ targets: [A, B, `${A}/`] }), ['targets.2: is targets[0] again']);
  t.same(problems({ targets: [A, 'http://user:secret@bh-2:8080'] }), [
    'targets.1: must not carry a query, a fragment or credentials',
  ]);
  for (const share of ['101%', '-1%', 'half', '50']) {
    t.same(
      problems({ targets: [A, B], outlier: { max_ejected: share } }),
      ['outlier.max_ejected: must be a percentage from 0% to 100% (e.g. 50%)'],
      `max_ejected ${share}`,
    );
  }
  t.match(problems({ targets: [A], retries: { attempts: 6 } }), [/^retries\.attempts: .*<=5/]);
  t.same(problems({ targets: [A], health_check: { path: 'api/v2/spec' } }), [
    'health_check.path: must be a path starting with /',
  ]);
  t.same(problems({ targets: [A], balance: 'random' }), [
    'balance: must be "least_request" or "round_robin"',
  ]);
});

t.test('every problem is listed at once, not only the first', async (t) => {
  t.same(problems({ targets: [A, A], retries: { budget: '200%' } }).sort(), [
    'retries.budget: must be a percentage from 0% to 100% (e.g. 50%)',
    'targets.1: is targets[0] again',
  ]);
});

t.test('the defaults: least_request, outlier 5 / 30s / 50%, one retry within 20%', async (t) => {
  const config = shape.parse({ targets: [A, B] });
  t.same(config, {
    targets: [A, B],
    balance: 'least_request',
    outlier: { consecutive_failures: 5, base_ejection: 30_000, max_ejected: 0.5 },
    retries: { attempts: 1, budget: 0.2 },
  });
  t.same(targetSettings(config), {
    balance: 'least_request',
    outlier: { consecutiveFailures: 5, baseEjection: 30_000, maxEjected: 0.5 },
    retries: { attempts: 1, budget: 0.2 },
  });
  const checked = shape.parse({
    targets: [A],
    health_check: { path: '/api/v2/spec', interval: '2s' },
    outlier: { max_ejected: '12.5%' },
  });
  t.same(checked.health_check, {
    path: '/api/v2/spec',
    interval: 2000,
    timeout: 1000,
    healthy: 2,
    unhealthy: 2,
  });
  t.equal(checked.outlier.max_ejected, 0.125);
  t.same(targetUrls(shape.parse({ url: A })), [A], 'one url is one target');
  t.same(targetUrls(shape.parse({ targets: [A, B] })), [A, B]);
});
