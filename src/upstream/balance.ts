/**
 * The balancing policies of contract §5: `least_request` (the fewest requests in flight, ties at
 * random; the default) and `round_robin`, each picking among the targets it is told are usable.
 * undici's `BalancedPool` balances by a weighted round robin with error penalties and knows neither
 * requests in flight nor ejection, so the pick is made here, over one undici pool per target.
 */
import type { Balance } from '../config/upstream-targets.js';

/** What a policy reads of a target. */
export interface Balanced {
  /** Requests sent to it and not yet over. */
  readonly inFlight: number;
}

/** Picks one of `targets` for which `usable` holds; undefined when none does. */
export type Balancer = <T extends Balanced>(
  targets: readonly T[],
  usable: (target: T) => boolean,
) => T | undefined;

/** The policy `balance` names; `random` returns a number in [0, 1) (a test may give its own). */
export function balancer(balance: Balance, random: () => number = Math.random): Balancer {
  return balance === 'round_robin' ? roundRobin() : leastRequest(random);
}

/** The usable target with the fewest requests in flight, ties broken at random (one pass, no array). */
function leastRequest(random: () => number): Balancer {
  return (targets, usable) => {
    let best: (typeof targets)[number] | undefined;
    let ties = 0;
    for (const target of targets) {
      if (!usable(target)) continue;
      if (best === undefined || target.inFlight < best.inFlight) {
        best = target;
        ties = 1;
      } else if (target.inFlight === best.inFlight) {
        // Reservoir sampling: each of the k tied targets ends up chosen with probability 1/k.
        ties++;
        if (random() * ties < 1) best = target;
      }
    }
    return best;
  };
}

/** The next usable target after the last one picked, in the order the targets are listed. */
function roundRobin(): Balancer {
  let next = 0;
  return (targets, usable) => {
    const size = targets.length;
    for (let step = 0; step < size; step++) {
      const i = (next + step) % size;
      const target = targets[i] as (typeof targets)[number];
      if (!usable(target)) continue;
      next = (i + 1) % size;
      return target;
    }
    return undefined;
  };
}
