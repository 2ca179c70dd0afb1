#!/usr/bin/env node
/**
 * The cost of one rate-limit decision with the memory store (issue 15): nanoseconds per decision,
 * for one identity over its limit and for 10,000 identities taking turns under theirs, and the heap
 * growth over a million decisions once the store holds every identity (it is bounded by max_keys:
 * a steady load must not grow it). Run by `npm run bench` at its end, or alone:
 *
 *   npm run build && node bench/ratelimit.mjs
 */
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { MemoryStore } from '../dist/ratelimit/memory.js';
import { ruleOf } from '../dist/ratelimit/store.js';

if (globalThis.gc === undefined) setFlagsFromString('--expose-gc');
const gc = globalThis.gc ?? runInNewContext('gc');

/** Nanoseconds per call of `fn(i)` over about `ms` milliseconds, after a warm-up. */
function nsPerCall(fn, ms) {
  for (let i = 0; i < 100_000; i++) fn(i);
  let n = 0;
  const start = performance.now();
  let now = start;
  while (now - start < ms) {
    for (let i = 0; i < 1024; i++) fn(n + i);
    n += 1024;
    now = performance.now();
  }
  return ((now - start) * 1e6) / n;
}

/** Heap used (bytes) after a full collection. */
function heap() {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** The timings, each on a store of its own (dropped when done, before the heap is measured). */
function timings(ms, rules, two, identities) {
  const results = [];
  const one = new MemoryStore(100_000);
  results.push({
    name: 'memory store, one identity over its limit (55/1 s): ns per decision',
    value: nsPerCall(() => one.decide('token:a', rules, true), ms),
    unit: 'ns',
  });
  const many = new MemoryStore(100_000);
  results.push({
    name: 'memory store, 10,000 identities in turn, one policy: ns per decision',
    value: nsPerCall((i) => many.decide(identities[i % identities.length], rules, true), ms),
    unit: 'ns',
  });
  const both = new MemoryStore(100_000);
  results.push({
    name: 'memory store, 10,000 identities in turn, two policies: ns per decision',
    value: nsPerCall((i) => both.decide(identities[i % identities.length], two, true), ms),
    unit: 'ns',
  });

  return results;
}

/** Each figure as `{name, value}`; `ms` bounds each timing. */
export function rateLimitBenchmarks(ms = 1000) {
  const rules = [ruleOf('default', 55, 1000)];
  const two = [ruleOf('default', 55, 1000), ruleOf('writes', 10, 60_000)];
  const identities = Array.from(
    { length: 10_000 },
    (_, i) => `token:${String(i).padStart(8, '0')}-0000-4000-8000-000000000000`,
  );
  const results = [];

  // Heap first (before the timings' stores exist): fill the store (every identity, its rings grown to the limit), then a million more.
  const empty = heap();
  const steady = new MemoryStore(100_000);
  for (let i = 0; i < 1_000_000; i++) steady.decide(identities[i % identities.length], rules, true);
  const before = heap();
  const started = performance.now();
  for (let i = 0; i < 1_000_000; i++) steady.decide(identities[i % identities.length], rules, true);
  const took = performance.now() - started;
  const after = heap();
  // Used after the measure, so that the store is still alive when it is taken.
  if (steady.size !== identities.length) throw new Error(`the store holds ${steady.size} identities`);
  results.push({
    name: 'memory store, 1,000,000 decisions (10,000 identities): ns per decision',
    value: (took * 1e6) / 1e6,
    unit: 'ns',
  });
  results.push({
    name: 'memory store, heap growth over those 1,000,000 decisions',
    value: (after - before) / 1024,
    unit: 'KiB',
  });
  results.push({
    name: 'memory store, heap held for 10,000 identities (55/1 s each)',
    value: (before - empty) / 1024 / 1024,
    unit: 'MiB',
  });
  results.push(...timings(ms, rules, two, identities));
  return results;
}

/** The figures as a markdown table. */
export function rateLimitTable(results) {
  return [
    '',
    '## Rate limits: one decision with the memory store',
    '',
    '| measure | value |',
    '|---|---:|',
    ...results.map((r) => `| ${r.name} | ${r.value.toFixed(r.unit === 'ns' ? 0 : 1)} ${r.unit} |`),
    '',
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const line of rateLimitTable(rateLimitBenchmarks())) console.log(line);
}
