/**
 * What one configuration runs (its pipeline, backends, tokens, limits and key sources), built at
 * start and again on every reload (`app.ts` swaps them), and what outlives it (the app instance's
 * shared state).
 */
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { openAuditTrail } from './audit/store-for.js';
import type { AuditTrail } from './audit/trail.js';
import { createAuthenticate } from './auth/authenticate.js';
import type { KeySourceInfo } from './auth/jwt.js';
import type { KeySources } from './auth/key-sources.js';
import type { FileLocks } from './backends/file-locks.js';
import { createBackends } from './backends/index.js';
import { GATEWAY_SCHEMA } from './backends/postgres/schema.js';
import type { Config } from './config/schema.js';
import { Holds } from './holds.js';
import { createClientAddressing, type ClientAddressing } from './http/client-address.js';
import type { DeadlineClock } from './http/deadline-clock.js';
import type { Pipeline } from './http/stage.js';
import type { Logger } from './observability/logger.js';
import { type Check, checkReady } from './observability/checks.js';
import type { ClientTrust } from './tls/trust.js';
import type { Metrics } from './observability/metrics.js';
import type { Tracing } from './observability/tracing/tracing.js';
import { createAssetGroupTagMember } from './operations/asset-group-tag-member.js';
import { createAuditList } from './operations/audit-list.js';
import { createCollectorChecksum } from './operations/collector-checksum.js';
import { createPassthroughOperation, createPublicOperation } from './operations/passthrough/index.js';
import { createSsoProviderUpdate } from './operations/sso-provider-update.js';
import { createPipeline } from './pipeline.js';
import { createRateLimits, type RateLimitCounts, routeLimitsInMemory } from './ratelimit/index.js';
import { BodyReader } from './auth/verified-body.js';
import { createRouteTable } from './http/route-table.js';
import { openTokens, type Tokens } from './tokens/index.js';

/** What one configuration builds; replaced whole on reload. */
export interface Runtime {
  readonly config: Config;
  readonly tokens: Tokens;
  /** Backends reachable and key sources loaded. */
  ready(): boolean;
  /** Each readiness check by name (`keys`, each identity provider, each backend), for /readyz. */
  checks(): Record<string, Check>;
  /** The identity providers' key sources. */
  keySources(): KeySourceInfo[];
  /** Stops what this configuration runs (backends, key refreshes). */
  close(): Promise<void>;
  /** The requests running on this configuration (see `take` of the handler). */
  readonly holds: Holds;
  /** A request that took this configuration has ended. */
  release(): void;
  readonly pipeline: Pipeline;
  /** How each request's client address is found (`server.trusted_proxies`). */
  readonly addressing: ClientAddressing;
}

/** What outlives a configuration: the app instance's logger, metrics and per-file write turns. */
export interface Instance {
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly fileLocks: FileLocks;
  /** Identity providers' last good keys, kept across reloads (a reload with the source unchanged). */
  readonly keySources: KeySources;
  /** The timer wheel of the requests' deadlines. */
  readonly clock: DeadlineClock;
  /** The memory rate-limit store's counts, kept across reloads. */
  readonly rateLimitCounts: RateLimitCounts;
  /** Spans of requests and backend calls (`tracing`, which takes a restart); absent when off. */
  readonly tracing?: Tracing;
  /** Which connections were verified against the client trust in force (with `server.tls`). */
  readonly clientTrust?: ClientTrust;
}

/** Builds what `config` runs; `previous` lends what a reload keeps (an unchanged token store). */
export async function buildRuntime(config: Config, instance: Instance, previous?: Runtime): Promise<Runtime> {
  const { logger, metrics, keySources, tracing } = instance;
  const tmpDir = config.server.tmp_dir ?? tmpdir();
  await access(tmpDir, constants.W_OK).catch((err: Error) => {
    throw new Error(`server.tmp_dir ${tmpDir} is not a writable folder: ${err.message}`, { cause: err });
  });
  const backends = await createBackends(config, instance);
  let audit: AuditTrail | undefined;
  try {
    audit = await openAuditTrail(config, {
      logger,
      metrics: metrics.audit,
      schema: GATEWAY_SCHEMA,
      database: (url) => backends.pool(url),
    });
  } catch (err) {
    await backends.close();
    throw new Error(`the audit trail cannot be opened: ${(err as Error).message}`, { cause: err });
  }
  const tokens = openTokens(
    config.auth.signature,
    { logger, metrics, schema: GATEWAY_SCHEMA },
    previous?.tokens,
  );
  const authenticate = createAuthenticate({
    tokens: tokens.registry,
    logger,
    keySources,
    auth: config.auth,
    server: config.server,
    metrics,
    tmpDir,
    ...(tracing && { tracing }),
    ...(instance.clientTrust && { clientTrust: instance.clientTrust }),
  });
  const limits =
    config.rate_limits &&
    (await createRateLimits(config.rate_limits, { logger, metrics, counts: instance.rateLimitCounts }));
  const byAddress = limits?.stages.unauthenticated;
  const upstreamDeps = { metrics, logger, ...(tracing && { tracing }) };
  const passthrough = config.passthrough && createPassthroughOperation(config.passthrough, upstreamDeps);
  const open =
    config.passthrough &&
    createPublicOperation(config.passthrough, upstreamDeps, {
      // A password guesser is stopped at the edge: the service's 401 on `login` is a failed
      // authentication of the address (contract §11).
      answered(ctx, status) {
        if (status === 401 && ctx.route?.name === 'login') byAddress?.record(ctx);
      },
    });
  const pipeline = createPipeline({
    ...(limits && { rateLimits: limits.stages }),
    ...(audit && { refusals: audit }),
    prefer: config.prefer,
    clock: instance.clock,
    authenticate,
    operations: {
      GetCollectorChecksum: createCollectorChecksum({ backend: backends.collectors }),
      UpdateSSOProvider: createSsoProviderUpdate({
        backend: backends.ssoProviders,
        forms: config.forms,
        logger,
        ...(audit && { audit }),
      }),
      GetAssetGroupTagMember: createAssetGroupTagMember({ backend: backends.assetGroupTags }),
      ...(audit && config.audit?.serve_api === true && { ListAuditLogs: createAuditList({ trail: audit }) }),
    },
    ...(passthrough &&
      open &&
      config.passthrough && {
        frontDoor: {
          table: createRouteTable(config.routes ?? [], config.passthrough.max_body),
          passthrough,
          public: open,
          limits: limits?.routes ?? routeLimitsInMemory({ metrics, counts: instance.rateLimitCounts }),
          body: new BodyReader(config.server, tmpDir),
        },
      }),
  });
  /** What must be ready besides the key sources (whose own rule says which provider is required). */
  const stores = (): Record<string, Check> => ({
    ...backends.checks(),
    ...(audit && { audit: auditCheck(audit) }),
    ...tokens.checks(),
    ...(passthrough && { passthrough: passthrough.ready?.() ?? true }),
  });
  const checks = () => ({
    keys: authenticate.ready(),
    ...authenticate.checks(),
    ...stores(),
    ...limits?.checks(),
  });
  const holds = new Holds();
  return {
    config,
    holds,
    release: () => holds.release(),
    pipeline,
    addressing: createClientAddressing(config.server),
    tokens,
    ready: () =>
      authenticate.ready() && Object.values(stores()).every(checkReady) && (limits?.ready() ?? true),
    checks,
    keySources: () => authenticate.sources(),
    async close() {
      authenticate.close();
      // The trail first: its refusals still being written go out on the backends' pool.
      await audit?.close();
      await Promise.allSettled([
        backends.close(),
        tokens.close(),
        passthrough?.close?.(),
        open?.close?.(),
        limits?.close(),
      ]);
    },
  };
}

/**
 * The audit store as `/readyz` names it (contract §12): ready while it takes appends; degraded (the
 * gateway still serves reads, and refuses changes with 503) while they fail.
 */
function auditCheck(audit: AuditTrail): Check {
  const { kind, where, ready } = audit.store;
  return ready() ? { ok: `${kind} ${where}` } : { degraded: `appends failing: ${kind} ${where}` };
}

/** Removes the `gateway_jwks_keys` series of the providers of `gone` that `kept` does not have. */
export function dropKeyGauges(metrics: Metrics, gone: Runtime, kept: Runtime): void {
  const names = new Set(kept.keySources().map((s) => s.name));
  for (const s of gone.keySources()) if (!names.has(s.name)) metrics.jwksKeys.remove({ provider: s.name });
}

/** The readiness checks `next` fails that `old` passes (or does not have): why it may not take over. */
export function lacking(next: Runtime, old: Runtime): string[] {
  const had = old.checks();
  return Object.entries(next.checks())
    .filter(([name, check]) => !checkReady(check) && (had[name] === undefined || checkReady(had[name])))
    .map(([name]) => name);
}
