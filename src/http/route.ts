/**
 * What routing finds for a request: its operation, its path parameters and its route's name, and for
 * a route of the front door's table (contract §11) what that route asks of its requests.
 */
import type { OperationName } from '../config/operation-paths.js';
import type { Permission } from '../config/permissions.js';

/**
 * The `operation` of a route: one of the three operations, `ListAuditLogs` (the audit trail's read
 * API, contract §12), `passthrough` (an authenticated request
 * forwarded to the service), `public` (one forwarded without credentials, contract §11), or
 * `unmatched` (a route that hides its path: `auth: deny`).
 */
export type OperationId = OperationName | 'ListAuditLogs' | 'passthrough' | 'public' | 'unmatched';

/** A matched route: the operation, its path parameters (percent-decoded once) and its name. */
export interface Route {
  readonly operation: OperationId;
  readonly params: Readonly<Record<string, string>>;
  /** The route's name (the log line's `route`): the operation's id, or the route table's name. */
  readonly name: string;
  /** For a route of the front door's table: what it asks of its requests. */
  readonly rule?: RouteRule;
}

/** What a route of the table asks of its requests. */
export interface RouteRule {
  readonly name: string;
  readonly auth: 'required' | 'none' | 'deny';
  /** With `required`: the permission needed; absent, any verified identity. */
  readonly permission?: Permission;
  /** Per client address (`none`) or per verified identity (`required`), under the key `route:<name>`. */
  readonly rateLimit?: { readonly limit: number; readonly window: number };
  /** The route's body limit (bytes) instead of `server.max_body_size`. */
  readonly maxBody?: number;
  /** The route's `Prefer` ceiling (seconds) instead of `prefer.max_wait`. */
  readonly maxWait?: number;
}
