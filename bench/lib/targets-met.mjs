/**
 * The figures issue 5 sets for this gateway, each with the value measured and whether it is met,
 * so that a run says at once which target is missed.
 */

const MIB = 1024 * 1024;

/** One line per target: `met`, `MISSED` or `n/a` (not measurable this run), the value and the goal. */
export function targetLines(targets, { diffCannon, diffPaced, rss, rssWarm }) {
  const by = (name) => targets.find((t) => t.name === name);
  const rps = (name) => {
    const t = by(name);
    return t && !t.unavailable ? t.rps : NaN;
  };
  const bare = rps('bare node:http (ceiling)');
  const undici = rps('undici proxy (floor)');
  const hp3 = rps('http-proxy-3');
  const checks = [];
  const ratio = (label, name, base, baseName, goal) => {
    const value = rps(name) / base;
    checks.push([value >= goal, `${label}: ${value.toFixed(3)}× ${baseName} (goal ≥ ${goal}×)`]);
  };
  ratio(
    'member through the upstream, signed',
    'gateway member upstream, signed',
    undici,
    'undici proxy',
    0.8,
  );
  ratio('member through the upstream, signed', 'gateway member upstream, signed', hp3, 'http-proxy-3', 2);
  ratio('member through the upstream, JWT', 'gateway member upstream, JWT', undici, 'undici proxy', 0.8);
  ratio('local member lookup, signed', 'gateway member local, signed', bare, 'bare', 0.5);
  ratio('local member lookup, JWT', 'gateway member local, JWT', bare, 'bare', 0.5);
  ratio('cached checksum, signed', 'gateway checksum cached, signed', bare, 'bare', 0.6);
  ratio('cached checksum, JWT', 'gateway checksum cached, JWT', bare, 'bare', 0.6);
  for (const [label, diff] of [
    ['paced', diffPaced],
    ['autocannon overallRate', diffCannon],
  ]) {
    checks.push(
      Number.isNaN(diff)
        ? [
            null,
            `half load, ${label}: not measured, a rate not held or a lagging load process (see the half-load table)`,
          ]
        : [diff <= 1, `half load, ${label}: gateway p99 − bare p99 = ${diff.toFixed(2)} ms (goal ≤ 1 ms)`],
    );
  }
  const allOk = [rss, rssWarm].every((r) => Object.keys(r.statuses).every((s) => s === '200'));
  checks.push([
    rss.growth <= 64 * MIB && allOk,
    `RSS growth under 20 concurrent 1 MiB uploads, fresh process: ${(rss.growth / MIB).toFixed(1)} MiB (goal ≤ 64 MiB${allOk ? '' : ', and every upload answered 200'}; after one upload alone: ${(rssWarm.growth / MIB).toFixed(1)} MiB)`,
  ]);
  const w = by('gateway member upstream, signed, 2 workers');
  if (w && !w.unavailable) {
    const one = rps('gateway member upstream, signed');
    checks.push([
      true,
      `2 workers vs 1 (upstream, signed): ${(w.rps / one).toFixed(2)}× (no goal; shown for item 4)`,
    ]);
  }
  return checks.map(([ok, text]) => `${ok === null ? 'n/a   ' : ok ? 'met   ' : 'MISSED'} ${text}`);
}
