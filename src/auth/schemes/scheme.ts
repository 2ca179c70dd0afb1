/**
 * What an authentication scheme is, after ory/oathkeeper's authenticators: a name, the reasons it
 * refuses for, and, opened for one configuration, its `WWW-Authenticate` challenge and `claim`.
 * A claim answers "not mine" (the next scheme tries), an identity, or throws a catalogue error whose
 * `reason` is one of the scheme's ("mine, but invalid"). The authenticate stage asks the schemes of
 * `index.ts` in order, and counts, logs and traces for all of them.
 */
import type { Config } from '../../config/schema.js';
import type { RequestContext } from '../../http/context.js';
import type { Identity } from '../../http/identity.js';
import type { Logger } from '../../observability/logger.js';
import type { Metrics } from '../../observability/metrics.js';
import type { Tracing } from '../../observability/tracing/tracing.js';
import type { ClientTrust } from '../../tls/trust.js';
import type { TokenRegistry } from '../../tokens/registry.js';
import type { Credentials } from '../credentials.js';
import type { KeySourceInfo } from '../jwt.js';
import type { KeySources } from '../key-sources.js';
import type { BodyReader } from '../verified-body.js';

/** A claim's answer for a request that is not the scheme's to judge. */
export const NOT_MINE: unique symbol = Symbol('not mine');

/** What a claim answers: not mine, or the identity (a promise only when it waits). */
export type Claim = typeof NOT_MINE | Identity | Promise<Identity>;

/** What a scheme is opened with: its configuration slices and the stage's shared parts. */
export interface SchemeDeps {
  readonly auth: Config['auth'];
  readonly server: Config['server'];
  readonly metrics: Metrics;
  /** ms since the epoch (frozen by tests). */
  readonly now: () => number;
  /** Reads a body under the limit; a scheme that verifies the body reads it here. */
  readonly body: BodyReader;
  readonly logger?: Logger;
  /** The signed-request tokens (default: the YAML list alone). */
  readonly tokens?: TokenRegistry;
  /** Identity providers' key source states, kept across reloads. */
  readonly keySources?: KeySources;
  readonly tracing?: Tracing;
  /** Which connections were verified against the client trust in force (with `server.tls`). */
  readonly clientTrust?: ClientTrust;
}

/** One authentication scheme, as the scheme list names it. */
export interface AuthScheme {
  /** The `scheme` label of `gateway_auth_failures_total`, and `auth_scheme` in the log line. */
  readonly name: string;
  /** Every `reason` its refusals carry: each is exported at 0 from the first scrape (contract §6). */
  readonly reasons: readonly string[];
  open(deps: SchemeDeps): OpenScheme;
}

/** A scheme opened for one configuration. */
export interface OpenScheme {
  /** Whether the configuration turns it on: its challenge is then named on a 401 without credentials. */
  readonly on: boolean;
  /**
   * Its `WWW-Authenticate` challenge on a 401 it refuses with `reason` (or, without one, among those
   * of a request without credentials). Absent: it has none of its own (a TLS client certificate).
   */
  challenge?(reason?: string): string;
  /**
   * Judges the request. A scheme that verifies the body as it reads it (a signature) leaves the
   * verified body in `ctx.body`; any other's is read by the stage once the identity is known.
   */
  claim(ctx: RequestContext, credentials: Credentials): Claim;
  /** False until what it needs has loaded (an identity provider's keys); absent: always ready. */
  ready?(): boolean;
  /** Its readiness checks for `/readyz`, by name. */
  checks?(): Record<string, boolean | string>;
  /** Its identity providers' key sources (kept across reloads). */
  sources?(): KeySourceInfo[];
  /** Stops its background work. */
  close?(): void;
}
