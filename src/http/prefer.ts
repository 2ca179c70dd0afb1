/**
 * The `Prefer: wait=N` policy (contract §2): how many seconds a request may take, as its header asks
 * within the configured bounds, and the `Preference-Applied` that says so.
 */
import { errors } from '../errors.js';

export interface PreferPolicy {
  /** Seconds when no `Prefer` is sent, or `wait=0`. */
  readonly default_wait: number;
  /** The most seconds a client may ask for. */
  readonly max_wait: number;
  /** Whether `wait=-1` removes the deadline. */
  readonly allow_bypass: boolean;
}

const PREFER = /^wait=(-1|[0-9]+)$/;

/**
 * The seconds of the deadline `header` asks for under `policy` (undefined when absent), or -1 for a
 * bypass. Throws the catalogue's 400 for a value that does not match `^wait=(-1|[0-9]+)$` or a
 * disabled bypass.
 */
export function preferredWait(header: string | undefined, policy: PreferPolicy): number {
  if (header === undefined) return policy.default_wait;
  const m = PREFER.exec(header);
  if (!m) throw errors.preferInvalid(header);
  if (m[1] === '-1') {
    if (!policy.allow_bypass) throw errors.preferBypassDisabled();
    return -1;
  }
  // wait=0 means the default (never "no deadline"); digits beyond max_wait clamp without overflow.
  const digits = (m[1] as string).replace(/^0+(?=\d)/, '');
  const asked = digits.length > 10 ? Number.POSITIVE_INFINITY : Number(digits);
  return asked === 0 ? policy.default_wait : Math.min(asked, policy.max_wait);
}

/**
 * `Preference-Applied` of `seconds`; the last value is kept, since most requests get the same wait
 * (the default).
 */
export const appliedWait = (() => {
  let last = Number.NaN;
  let text = '';
  return (seconds: number): string => {
    if (seconds !== last) {
      last = seconds;
      text = `wait=${seconds}`;
    }
    return text;
  };
})();
