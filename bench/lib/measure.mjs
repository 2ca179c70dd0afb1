/**
 * One run of the comparison: every target warmed up, then driven round after round (the targets
 * interleaved, each round starting one target further on), the lowest round of each kept; then
 * every target driven at one fixed offered load (half the undici proxy's saturated req/s in this
 * run) for its latency.
 */
import { drive, failuresOf } from './load.mjs';
import { hasExited } from './processes.mjs';

const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

/**
 * Drives `targets` (started for this run) and resolves with one result per target id: `cpuUs` and
 * `systemUs` (the lowest round), `rounds` (every round's CPU µs/req, in the order run), `rps` (the
 * mean), `fixed` (the fixed-load run: `rate`, `p50`, `p99`, `cpuUs`), `processes` (the lowest
 * round's per-process CPU and bytes written), the failures, and `crashed` when it exited.
 */
export async function measureRun(targets, opts, progress, run) {
  const live = targets.filter((t) => !t.wrong);
  const results = new Map(live.map((t) => [t.id, { runs: [], failures: 0, statuses: {}, pgid: t.pgid }]));
  const count = (t, r) => {
    const res = results.get(t.id);
    res.failures += failuresOf(r);
    for (const [c, n] of Object.entries(r.statuses)) res.statuses[c] = (res.statuses[c] ?? 0) + n;
  };
  const alive = (t) => {
    if (results.get(t.id).crashed) return false;
    if (!hasExited(t.proc)) return true;
    results.get(t.id).crashed = `${t.proc.name} exited during the run (see its .err file)`;
    return false;
  };
  progress(`run ${run}: warm-up, ${opts.warmup} requests per target`);
  for (const t of live)
    if (alive(t)) count(t, await drive(t, { connections: opts.connections, amount: opts.warmup }));
  for (let round = 0; round < opts.rounds; round++) {
    const order = live.map((_, i) => live[(i + round) % live.length]);
    progress(`run ${run}: round ${round + 1}/${opts.rounds}`);
    for (const t of order) {
      if (!alive(t)) continue;
      const r = await drive(t, { connections: opts.connections, amount: opts.requests });
      count(t, r);
      results.get(t.id).runs.push(r);
    }
  }
  for (const t of live) {
    const res = results.get(t.id);
    if (res.runs.length === 0) continue;
    const lowest = res.runs.reduce((a, b) => (b.cpuUs < a.cpuUs ? b : a));
    res.cpuUs = lowest.cpuUs;
    res.systemUs = lowest.systemUs;
    res.processes = lowest.processes;
    res.rounds = res.runs.map((r) => r.cpuUs);
    res.rps = mean(res.runs.map((r) => r.rps));
  }
  // The fixed load: half what the undici proxy answered flat out in this run.
  const floor = results.get(opts.latencyPeer);
  const rate = opts.rate ?? (floor?.rps ? Math.round(floor.rps / 2) : undefined);
  if (rate !== undefined) {
    const amount = Math.max(2000, Math.round(rate * opts.latencySeconds));
    progress(`run ${run}: fixed load, ${rate} req/s, ${amount} requests per target`);
    for (const t of live) {
      if (!alive(t)) continue;
      const r = await drive(t, { connections: opts.connections, amount, rate });
      count(t, r);
      results.get(t.id).fixed = { rate, p50: r.p50, p99: r.p99, cpuUs: r.cpuUs, rps: r.rps };
    }
  }
  for (const t of live) alive(t);
  for (const t of targets.filter((x) => x.wrong))
    results.set(t.id, { wrong: t.wrong, failures: 1, runs: [] });
  return results;
}
