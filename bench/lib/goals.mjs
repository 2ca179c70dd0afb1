/**
 * The ratios of issue 13, computed from the server processes' own CPU time per request: the peer's
 * µs/req over the gateway's (above 1: the gateway costs less than the peer). A ratio within 10 % of
 * its goal counts as met (`--check` fails the run otherwise).
 */

/** Every comparison the run reports, in the order. */
const COMPARISONS = [
  { path: 'member, local store, signed', gateway: 'gw-local', peer: 'bare', goal: 0.5 },
  { path: 'checksum, cache hit, signed', gateway: 'gw-checksum', peer: 'bare', goal: 0.5 },
  {
    path: 'member through an upstream, signed in, re-signed out',
    gateway: 'gw-upstream',
    peer: 'undici',
    goal: 0.8,
  },
  { path: 'same', gateway: 'gw-upstream', peer: 'http-proxy-3', goal: 1.2 },
  { path: 'same', gateway: 'gw-upstream', peer: 'nginx' },
  // Issue 30: balancing among three targets costs at most 5 % of CPU per request over one target.
  { path: 'member through three targets, over one', gateway: 'gw-targets', peer: 'gw-upstream', goal: 0.95 },
  // Issue 28: a public request costs at most the undici proxy's CPU × 1.25.
  { path: 'public pass-through, no authentication', gateway: 'gw-public', peer: 'undici', goal: 0.8 },
];

/** The tolerance: a ratio at or above 90 % of its goal is met. */
const TOLERANCE = 0.9;

/** One row per comparison: the figures, the ratio, the goal and whether it is met (`n/a`: not run). */
export function goalRows(targets) {
  const by = (role) => targets.find((t) => t.role === role && !t.unavailable && !(t.failures > 0));
  return COMPARISONS.map((c) => {
    const gateway = by(c.gateway);
    const peer = by(c.peer);
    const ratio = gateway && peer ? peer.cpuUs / gateway.cpuUs : NaN;
    const verdict = !Number.isFinite(ratio)
      ? 'n/a'
      : c.goal === undefined
        ? 'report'
        : ratio >= TOLERANCE * c.goal
          ? 'met'
          : 'MISSED';
    return {
      path: c.path,
      gatewayName: gateway?.name ?? c.gateway,
      gatewayUs: gateway?.cpuUs,
      peerName: peer?.name ?? `${c.peer} (not run)`,
      peerUs: peer?.cpuUs,
      ratio,
      goal: c.goal,
      verdict,
    };
  });
}

/** The table of comparisons, as rows of cells. */
export function goalCells(rows) {
  const us = (n) => (Number.isFinite(n) ? `${n.toFixed(1)} µs` : '—');
  return rows.map((r) => [
    r.path,
    us(r.gatewayUs),
    `${r.peerName}: ${us(r.peerUs)}`,
    Number.isFinite(r.ratio) ? r.ratio.toFixed(2) : '—',
    r.goal === undefined ? 'report' : `≥ ${r.goal}`,
    r.verdict,
  ]);
}

export const GOAL_COLUMNS = ['path', 'gateway', 'peer', 'peer/gateway', 'target', 'verdict'];
