/**
 * `routes` (contract §11): the operator's entries of the front door's route table, checked in order
 * before the service's own table. Each entry names a path or a prefix, the methods, whether the
 * gateway authenticates (`required`), serves the public (`none`) or hides the path (`deny`), and the
 * route's own limits. Paths are kept decoded once, as the router matches them.
 */
import { unescape } from 'node:querystring';
import { z } from 'zod';
import { int, leaf, size } from './leaves.js';
import { overlappedOperation } from './operation-paths.js';
import { permission } from './permissions.js';
import { limitSchema, windowSchema } from './rate-limits.js';

/** The names of the service's own routes (an operator entry of one of these names replaces it). */
export const BUILT_IN_ROUTES = ['login', 'sso', 'spec', 'ui', 'version', 'upload', 'passthrough'] as const;

const METHOD = /^[A-Z]{1,20}$/;

/** Why `text` is not a path a route may name (undefined when it is one). */
function pathProblem(text: string): string | undefined {
  if (!text.startsWith('/')) return 'must start with "/"';
  if (/[?#\\\s]/.test(text)) return 'must not hold "?", "#", "\\" or white space';
  if (/%(?![0-9a-fA-F]{2})/.test(text)) return 'has a malformed percent-encoding';
  const segments = text.slice(1).split('/');
  const decoded = segments.map((s) => unescape(s));
  if (decoded.some((s) => /[/\\\0]/.test(s))) return 'must not hold an encoded "/", "\\" or NUL';
  if (segments.slice(0, -1).includes('')) return 'must not hold "//"';
  if (decoded.some((s) => s === '.' || s === '..')) return 'must not hold a dot segment';
  return undefined;
}

const routePath = () =>
  leaf(
    z.string().superRefine((text, ctx) => {
      const problem = pathProblem(text);
      if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
    }),
  );

const routeEntry = z
  .strictObject({
    name: leaf(z.string().regex(/^[a-z0-9_-]{1,64}$/, 'must match [a-z0-9_-]{1,64}')),
    /** Exactly this path. */
    path: routePath().optional(),
    /** Every path that starts with it (it ends in `/`). */
    prefix: routePath()
      .refine((p) => typeof p !== 'string' || p.endsWith('/'), 'must end with "/"')
      .optional(),
    methods: z
      .array(leaf(z.string().regex(METHOD, 'must be an HTTP method in capitals (GET, POST, …)')))
      .min(1, 'must list at least one method (leave it out for every method)')
      .optional(),
    auth: leaf(
      z.enum(['required', 'none', 'deny'], { error: 'must be "required", "none" or "deny"' }),
    ).default('required'),
    permission: permission.optional(),
    rate_limit: z.strictObject({ limit: limitSchema(), window: windowSchema() }).optional(),
    max_body: size().optional(),
    max_wait: int(1, 2_147_483).optional(),
  })
  .superRefine((entry, ctx) => {
    const at = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
    if (entry.path !== undefined && entry.prefix !== undefined) {
      at('prefix', 'must not be set with path (an entry names one path, or one prefix)');
    } else if (entry.path === undefined && entry.prefix === undefined) {
      at('path', 'is required (or prefix, which ends in "/")');
    }
    if (entry.permission !== undefined && entry.auth !== 'required') {
      at('permission', 'applies only with auth: required');
    }
    if (entry.auth === 'deny') {
      for (const key of ['rate_limit', 'max_body', 'max_wait'] as const) {
        if (entry[key] !== undefined) at(key, 'does not apply with auth: deny (nothing is forwarded)');
      }
    }
    const given = entry.path ?? entry.prefix;
    if (typeof given !== 'string' || pathProblem(given) !== undefined) return;
    const prefix = entry.path === undefined;
    if (prefix && !given.endsWith('/')) return;
    const segments = given
      .slice(1)
      .split('/')
      .map((s) => unescape(s));
    if (prefix) segments.pop();
    const methods = Array.isArray(entry.methods)
      ? entry.methods.filter((m) => typeof m === 'string')
      : undefined;
    const op = overlappedOperation(segments, prefix, methods);
    if (op !== undefined) {
      at(
        prefix ? 'prefix' : 'path',
        `would match ${op.methods.join('/')} /${op.segments.join('/')} (${op.operation}), which is always the gateway's own: narrow the path or the methods`,
      );
    }
  });

/** `routes`: the operator's entries, checked in order. */
export const routesSchema = z.array(routeEntry).superRefine(
  (entries: ReadonlyArray<{ name?: unknown }>, ctx) => {
    const seen = new Map<string, number>();
    entries.forEach((entry, i) => {
      if (typeof entry.name !== 'string') return;
      const first = seen.get(entry.name);
      if (first !== undefined) {
        ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `is the name of routes[${first}] too` });
      } else seen.set(entry.name, i);
    });
    // Also when an entry has another problem, so that every problem is listed at once.
  },
  { when: (payload) => Array.isArray(payload.value) },
);

export type RouteConfig = z.output<typeof routeEntry>;

/** What `checkRoutes` reads of the whole configuration. */
interface RoutesInput {
  readonly passthrough?: unknown;
  readonly routes?: readonly RouteConfig[] | undefined;
  readonly server: { readonly workers: unknown };
  readonly rate_limits?: { readonly store: { readonly type: string } } | undefined;
}

/**
 * The checks that need more than `routes`: routes only in front of a service (`passthrough`), and
 * no per-process memory store for route limits with several workers (each would admit the limit).
 */
export function checkRoutes(c: RoutesInput, report: (path: PropertyKey[], message: string) => void): void {
  if (c.routes !== undefined && c.passthrough === undefined) {
    report(['routes'], 'needs passthrough (the routes lead to the service it names)');
    return;
  }
  if (c.passthrough === undefined || c.server.workers === 1) return;
  if (c.rate_limits?.store.type === 'redis') return;
  const limited = routeLimits(c.routes ?? []);
  if (limited.length === 0) return;
  report(
    ['server', 'workers'],
    `must be 1 while route rate limits (${limited.join(', ')}) are kept in a per-process memory store: configure rate_limits with a redis store`,
  );
}

/** The names of the routes in force that have a rate limit (the built-in `login` unless replaced). */
export function routeLimits(routes: readonly RouteConfig[]): string[] {
  const names = routes.filter((r) => r.rate_limit !== undefined).map((r) => r.name);
  if (!routes.some((r) => r.name === 'login')) names.unshift('login');
  return names;
}
