/**
 * The target metrics as Prometheus reads them: every state of every tracked backend exported (0
 * included), each target counted once, retries by reason and ejections from 0, and no target label.
 */
import { Registry } from 'prom-client';
import t from 'tap';
import { targetMetrics } from '../../src/observability/target-metrics.js';
import { metric } from '../helpers/metrics.js';

t.test('every state of every backend is exported, 0 included, and follows the targets', async (t) => {
  const registry = new Registry();
  const metrics = targetMetrics(registry);
  const states = { healthy: 3, unhealthy: 0, ejected: 0 };
  const stop = metrics.track('asset_group_tags', () => ({ ...states }));
  let text = await registry.metrics();
  for (const state of ['healthy', 'unhealthy', 'ejected']) {
    t.match(text, `gateway_upstream_targets{backend="asset_group_tags",state="${state}"} `, state);
  }
  t.equal(metric(text, 'gateway_upstream_targets', { state: 'healthy' }), 3);
  for (const reason of ['not_sent', 'failure', 'status']) {
    t.match(text, `gateway_upstream_retries_total{backend="asset_group_tags",reason="${reason}"} 0`);
  }
  t.match(text, 'gateway_upstream_ejections_total{backend="asset_group_tags"} 0');

  states.healthy = 1;
  states.unhealthy = 1;
  states.ejected = 1;
  metrics.retried('asset_group_tags', 'status');
  metrics.ejected('asset_group_tags');
  text = await registry.metrics();
  t.equal(metric(text, 'gateway_upstream_targets', { backend: 'asset_group_tags' }), 3, 'each target once');
  t.equal(metric(text, 'gateway_upstream_targets', { state: 'ejected' }), 1);
  t.equal(metric(text, 'gateway_upstream_retries_total', { reason: 'status' }), 1);
  t.equal(metric(text, 'gateway_upstream_ejections_total'), 1);
  t.notMatch(text, /target="/, 'no target label anywhere');

  // A reload opens the backend again: the newest report replaces the old, whose stop then does nothing.
  const stopNew = metrics.track('asset_group_tags', () => ({ healthy: 2, unhealthy: 0, ejected: 0 }));
  stop();
  text = await registry.metrics();
  t.equal(metric(text, 'gateway_upstream_targets', { state: 'healthy' }), 2);
  stopNew();
  text = await registry.metrics();
  t.notMatch(text, /gateway_upstream_targets\{/, 'a closed backend is no longer reported');
});
