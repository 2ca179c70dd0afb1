/**
 * The keys of an upstream run as several replicas (contract §5 "Several targets"): `targets` instead
 * of `url`, how requests are balanced among them, the optional active health check, passive
 * ejection and retries. Spread `targetsFields` into an upstream's shape (with `url` optional) and
 * wrap it in `withTargetChecks`, which names each problem's key.
 */
import { z } from 'zod';
import { duration, httpUrl, int, leaf } from './leaves.js';

/** A share written as a percentage (`50%`, `12.5%`), from 0% to 100%, as a fraction (0.5). */
export const percent = () =>
  leaf(
    z.string().transform((text, ctx) => {
      const m = /^\s*(\d+(?:\.\d+)?)\s*%\s*$/.exec(text);
      const value = m ? Number(m[1]) : Number.NaN;
      if (!(value >= 0 && value <= 100)) {
        ctx.addIssue({ code: 'custom', message: 'must be a percentage from 0% to 100% (e.g. 50%)' });
        return z.NEVER;
      }
      return value / 100;
    }),
  );

/** `health_check: {path, interval, timeout, healthy, unhealthy}`: `GET <path>` answered 2xx is a pass. */
const healthCheck = z.strictObject({
  path: leaf(z.string().regex(/^\/\S*$/, 'must be a path starting with /')),
  interval: duration(3_600_000, 1).default(5_000),
  timeout: duration(3_600_000, 1).default(1_000),
  healthy: int(1, 1000).default(2),
  unhealthy: int(1, 1000).default(2),
});

/** `outlier: {consecutive_failures, base_ejection, max_ejected}`: passive ejection, Envoy's outlier detection. */
const outlier = z.strictObject({
  consecutive_failures: int(1, 1000).default(5),
  base_ejection: duration(3_600_000, 1).default(30_000),
  max_ejected: percent().default(0.5),
});

/** `retries: {attempts, budget}`: at most `attempts` retries, within Envoy's retry budget. */
const retries = z.strictObject({
  attempts: int(0, 5).default(1),
  budget: percent().default(0.2),
});

/** The keys added to an upstream's shape. */
export const targetsFields = {
  targets: z.array(httpUrl()).min(1, 'must list at least one target URL').optional(),
  balance: leaf(
    z.enum(['least_request', 'round_robin'], { error: 'must be "least_request" or "round_robin"' }),
  ).default('least_request'),
  health_check: healthCheck.optional(),
  outlier: outlier.prefault({}),
  retries: retries.prefault({}),
};

export type HealthCheckConfig = z.output<typeof healthCheck>;
export type OutlierConfig = z.output<typeof outlier>;
export type RetriesConfig = z.output<typeof retries>;
export type Balance = 'least_request' | 'round_robin';

/** What `checkTargets` reads of an upstream's configuration. */
export interface TargetsInput {
  readonly url?: unknown;
  readonly targets?: readonly unknown[] | undefined;
}

type Report = (path: PropertyKey[], message: string) => void;

/**
 * Exactly one of `url` and `targets`; every target of the same scheme and listed once. For an
 * object's `superRefine`: `report` adds the issue at the key's path.
 */
export function checkTargets(value: TargetsInput, report: Report): void {
  const { url, targets } = value;
  if (url !== undefined && targets !== undefined) {
    report(['targets'], 'must not be set with url (one target is the same as url)');
    return;
  }
  if (url === undefined && targets === undefined) {
    report(['url'], 'is required (or targets, a list of URLs)');
    return;
  }
  if (targets === undefined) return;
  const seen = new Map<string, number>();
  let scheme: string | undefined;
  targets.forEach((target, i) => {
    // An unresolved `${env:}` reference (`check-config` without `--resolve`) is checked once resolved.
    if (typeof target !== 'string' || !URL.canParse(target)) return;
    const parsed = new URL(target);
    scheme ??= parsed.protocol;
    if (parsed.protocol !== scheme) {
      report(['targets', i], `must use the same scheme as targets[0] (${scheme.slice(0, -1)})`);
    }
    const key = `${parsed.origin}${parsed.pathname.replace(/\/+$/, '')}`;
    const first = seen.get(key);
    if (first !== undefined) report(['targets', i], `is targets[${first}] again`);
    else seen.set(key, i);
  });
}

/**
 * `shape` (an upstream's object, with `url` optional and `targetsFields` spread in) with the checks
 * of `checkTargets`, run even when another key has a problem, so that every problem is listed at once.
 */
export function withTargetChecks<S extends z.ZodObject>(shape: S): S {
  return shape.superRefine(
    (value, ctx) =>
      checkTargets(value as TargetsInput, (path, message) => ctx.addIssue({ code: 'custom', path, message })),
    { when: (payload) => typeof payload.value === 'object' && payload.value !== null },
  );
}

/** The target URLs of a checked upstream configuration: its `targets`, or its one `url`. */
export function targetUrls(config: {
  readonly url?: string;
  readonly targets?: readonly string[];
}): string[] {
  return config.targets !== undefined ? [...config.targets] : [config.url as string];
}
