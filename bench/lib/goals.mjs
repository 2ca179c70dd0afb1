/**
 * The verdicts: each goal of bench/rows.mjs computed in every run from the server processes' own
 * CPU time per request, and decided on the median over the runs (no tolerance beyond it). The
 * spread of the runs' figures is what "within noise" means.
 */
import { GOALS, LATENCY } from '../rows.mjs';

/** The median of the finite numbers of `xs` (NaN when there are none). */
export function median(xs) {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** How a goal reads: its figure from the row's and the peer's CPU µs/req, its target, and the test. */
function kindOf(goal) {
  if (goal.extraUs !== undefined) {
    return {
      figure: (row, peer) => row - peer,
      target: goal.extraUs === 'report' ? 'report' : `≤ +${goal.extraUs} µs`,
      met: (x) => x <= goal.extraUs,
      unit: ' µs',
      report: goal.extraUs === 'report',
    };
  }
  if (goal.within !== undefined) {
    return {
      figure: (row, peer) => row / peer,
      target: goal.within === 'report' ? 'report' : `≤ ${(1 + goal.within).toFixed(2)}`,
      met: (x) => x <= 1 + goal.within,
      unit: '',
      report: goal.within === 'report',
    };
  }
  return {
    figure: (row, peer) => peer / row,
    target: goal.ratio === undefined ? 'report' : `≥ ${goal.ratio}`,
    met: (x) => x >= goal.ratio,
    unit: '',
    report: goal.ratio === undefined,
  };
}

/** A run's result for `id` when it counts (measured, no failure). */
const usable = (run, id) => {
  const r = run.get(id);
  return r && Number.isFinite(r.cpuUs) && r.failures === 0 && !r.crashed ? r : undefined;
};

/**
 * One row per goal: the figure in each run, their median and spread, the target and the verdict
 * (`met`, `MISSED`, `report`, or `n/a` when a side was not measured in any run).
 */
export function goalRows(runs, rows) {
  const measured = new Set(rows.map((r) => r.id));
  // With `--only`, the goals of rows left out are left out too.
  return GOALS.filter((g) => measured.has(g.row) && measured.has(g.peer)).map((goal) => {
    const kind = kindOf(goal);
    const figures = runs.map((run) => {
      const row = usable(run, goal.row);
      const peer = usable(run, goal.peer);
      return row && peer ? kind.figure(row.cpuUs, peer.cpuUs) : NaN;
    });
    const mid = median(figures);
    const finite = figures.filter(Number.isFinite);
    const verdict = !Number.isFinite(mid) ? 'n/a' : kind.report ? 'report' : kind.met(mid) ? 'met' : 'MISSED';
    return {
      path: goal.path,
      figures,
      median: mid,
      spread: finite.length > 1 ? Math.max(...finite) - Math.min(...finite) : NaN,
      unit: kind.unit,
      target: kind.target,
      verdict,
      counts: !kind.report,
    };
  });
}

/**
 * The latency goal of every gateway row (`latency: false` opts out): its p99 at the fixed load at
 * most `LATENCY.p99Factor` × the undici proxy's, on the median of the runs' ratios.
 */
export function latencyRows(rows, runs) {
  return rows.map((row) => {
    const p50 = median(runs.map((run) => run.get(row.id)?.fixed?.p50 ?? NaN));
    const p99 = median(runs.map((run) => run.get(row.id)?.fixed?.p99 ?? NaN));
    const ratios = runs.map((run) => {
      const own = run.get(row.id)?.fixed?.p99;
      const peer = run.get(LATENCY.peer)?.fixed?.p99;
      return own !== undefined && peer ? own / peer : NaN;
    });
    const ratio = median(ratios);
    const goal = row.gateway !== undefined && row.latency !== false;
    const verdict = !Number.isFinite(ratio)
      ? goal
        ? 'n/a'
        : 'report'
      : !goal
        ? 'report'
        : ratio <= LATENCY.p99Factor
          ? 'met'
          : 'MISSED';
    const cpuUs = median(runs.map((run) => run.get(row.id)?.fixed?.cpuUs ?? NaN));
    const rate = median(runs.map((run) => run.get(row.id)?.fixed?.rate ?? NaN));
    return { id: row.id, name: row.name, rate, p50, p99, cpuUs, ratios, ratio, verdict, counts: goal };
  });
}
