/**
 * The request-duration histogram kept in plain numbers: what it exports is what prom-client's own
 * `Histogram` exports for the same observations, in the text format and summed across workers.
 */
import client from 'prom-client';
import t from 'tap';
import { DurationHistogram } from '../../src/observability/durations.js';
import { samples } from '../helpers/metrics.js';

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const NAME = 'gateway_request_duration_seconds';

/** The samples of `name` in `text` as sorted `name{sorted labels} value` lines (label order is free). */
function canonical(text: string, name = NAME): string[] {
  return samples(text)
    .filter((s) => s.name.startsWith(name))
    .map((s) => {
      const labels = Object.entries(s.labels).map(([k, v]) => `${k}="${v}"`);
      return `${s.name}{${labels.sort().join(',')}} ${s.value}`;
    })
    .sort();
}

/** Both histograms, each in a registry of its own, fed the same observations. */
function pair(observations: ReadonlyArray<readonly [string, number]>) {
  const reference = new client.Registry();
  const histogram = new client.Histogram({
    name: NAME,
    help: 'Time from the request line to the end of the response, by operation.',
    labelNames: ['operation'],
    buckets: BUCKETS,
    registers: [reference],
  });
  const ours = new client.Registry();
  const durations = new DurationHistogram(
    NAME,
    'Time from the request line to the end of the response, by operation.',
    'operation',
    BUCKETS,
  );
  ours.registerMetric(durations as unknown as client.Metric);
  for (const [operation, seconds] of observations) {
    histogram.observe({ operation }, seconds);
    durations.series(operation).observe(seconds);
  }
  return { reference, ours, durations };
}

// Bounds themselves (a value equal to a bound is in that bucket), between bounds, above every bound.
const OBSERVATIONS = [
  ['GetAssetGroupTagMember', 0.0001],
  ['GetAssetGroupTagMember', 0.005],
  ['GetAssetGroupTagMember', 0.0050001],
  ['GetAssetGroupTagMember', 0.3],
  ['GetAssetGroupTagMember', 30],
  ['GetAssetGroupTagMember', 31],
  ['GetCollectorChecksum', 0.02],
  ['GetCollectorChecksum', 0],
  ['unmatched', 1234.5],
] as const;

t.test('exports what prom-client exports for the same observations', async (t) => {
  const { reference, ours } = pair(OBSERVATIONS);
  const expected = canonical(await reference.metrics());
  t.equal(expected.length, 3 * (BUCKETS.length + 3), 'every bucket, +Inf, sum and count of three operations');
  t.same(canonical(await ours.metrics()), expected);
  t.match(await ours.metrics(), `# TYPE ${NAME} histogram`);
  t.match(
    await ours.metrics(),
    `${NAME}_bucket{le="0.005",operation="GetAssetGroupTagMember"} 2`,
    'a value equal to a bound is counted in it',
  );
});

t.test('no series before the first observation; reset brings every series back to zero', async (t) => {
  const { ours, durations } = pair([]);
  const text = await ours.metrics();
  t.match(text, `# HELP ${NAME} `);
  t.same(canonical(text), []);
  durations.series('GetCollectorChecksum').observe(0.2);
  t.match(await ours.metrics(), `${NAME}_count{operation="GetCollectorChecksum"} 1`);
  ours.resetMetrics();
  const after = await ours.metrics();
  t.match(after, `${NAME}_count{operation="GetCollectorChecksum"} 0`);
  t.match(after, `${NAME}_sum{operation="GetCollectorChecksum"} 0`);
  durations.series('GetCollectorChecksum').observe(0.2);
  t.match(await ours.metrics(), `${NAME}_bucket{le="0.25",operation="GetCollectorChecksum"} 1`);
});

t.test("workers' series are summed as prom-client's histograms are", async (t) => {
  const a = pair(OBSERVATIONS.slice(0, 5));
  const b = pair(OBSERVATIONS.slice(3));
  const summed = async (x: client.Registry, y: client.Registry) =>
    canonical(
      await client.AggregatorRegistry.aggregate([
        await x.getMetricsAsJSON(),
        await y.getMetricsAsJSON(),
      ]).metrics(),
    );
  t.same(await summed(a.ours, b.ours), await summed(a.reference, b.reference));
});

t.test('a histogram by another label exports as prom-client does too', async (t) => {
  const name = 'gateway_upstream_request_duration_seconds';
  const reference = new client.Registry();
  const histogram = new client.Histogram({
    name,
    help: 'Upstream request time, by backend.',
    labelNames: ['backend'],
    buckets: BUCKETS,
    registers: [reference],
  });
  const ours = new client.Registry();
  const durations = new DurationHistogram(name, 'Upstream request time, by backend.', 'backend', BUCKETS);
  ours.registerMetric(durations as unknown as client.Metric);
  for (const [backend, seconds] of [
    ['asset_group_tags', 0.003],
    ['asset_group_tags', 0.7],
    ['passthrough', 12],
  ] as const) {
    histogram.observe({ backend }, seconds);
    durations.series(backend).observe(seconds);
  }
  const lines = async (r: client.Registry) => canonical(await r.metrics(), name);
  t.same(await lines(ours), await lines(reference));
  t.equal((await lines(ours)).length, 2 * (BUCKETS.length + 3));
});
