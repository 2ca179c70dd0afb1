/**
 * Update SSO Provider as the audit trail records it (contract §12): `intent` made durable before the
 * backend is asked (none, no change: 503), then `success` (inside the change's transaction when the
 * trail shares the providers' database, else right after the commit point, whatever the deadline)
 * or `failure` with the public message of what went wrong. An outcome nobody can know (an upstream
 * that took the request and did not answer, a COMMIT that failed) writes no outcome entry: `verify`
 * then lists the intent.
 */
import { auditedChanges } from '../audit/fields.js';
import type { AuditTrail, UpdateOutcome } from '../audit/trail.js';
import type { BackendCall } from '../backends/backend-call.js';
import type {
  SsoProvider,
  SsoProviderPatch,
  SsoProvidersBackend,
  SsoProviderUpdate,
} from '../backends/sso-providers/backend.js';
import { errors, GatewayError } from '../errors.js';
import type { RequestContext } from '../http/context.js';
import { actorOf } from '../http/identity.js';
import { UpstreamAnswer } from '../upstream/answer.js';

/** Upstream failures that happen before any byte of the request reached the service. */
const NOT_SENT = new Set([
  'GW_UPSTREAM_UNREACHABLE',
  'GW_UPSTREAM_DNS_FAILED',
  'GW_UPSTREAM_CONNECT_TIMEOUT',
  'GW_UPSTREAM_ALL_TARGETS_OUT',
]);

/** One audited update: what the operation has validated, and the trail. */
export interface AuditedUpdateInput {
  readonly trail: AuditTrail;
  readonly backend: SsoProvidersBackend;
  readonly ctx: RequestContext;
  readonly call: BackendCall;
  readonly ssoProviderId: number;
  readonly patch: SsoProviderPatch;
  /** The fields the patch asks to set, as the trail names them. */
  readonly requested: string[];
  /** The provider as found before the change (unknown through an upstream). */
  readonly found: SsoProvider | undefined;
  /** The SHA-256 of the metadata file as sent, when one was. */
  readonly metadataSha256: string | undefined;
  /** Called at the commit point, before the outcome entry is written (the change's log line). */
  readonly committed: (result: SsoProviderUpdate | UpstreamAnswer) => void;
}

/** Runs the update with its entries; resolves once its outcome entry is durable (or cannot be known). */
export async function auditedUpdate(
  input: AuditedUpdateInput,
): Promise<SsoProviderUpdate | undefined | UpstreamAnswer> {
  const { trail, backend, ctx, call, ssoProviderId, patch, requested, found } = input;
  const update = trail.update({
    actor: actorOf(ctx.identity as NonNullable<RequestContext['identity']>),
    requestId: ctx.id,
    sourceIp: ctx.client,
    ssoProviderId,
    provider: found && { id: found.id, name: found.name },
    requested,
    metadataSha256: input.metadataSha256,
  });
  await update.intent(call.signal);

  const inTransaction = update.inTransaction;
  let writtenInTransaction = false;
  let result: SsoProviderUpdate | undefined | UpstreamAnswer;
  try {
    result = await backend.update(
      ssoProviderId,
      patch,
      call,
      inTransaction && {
        async beforeCommit(r, query) {
          await inTransaction(query, outcomeOf(r));
          writtenInTransaction = true;
        },
      },
    );
  } catch (err) {
    // A failed COMMIT may have committed: the success entry went with it, or did not exist.
    const unknown = writtenInTransaction ? !call.signal.aborted : outcomeUnknown(err, backend, call);
    if (!unknown) await update.failed(messageOf(err, call.signal));
    throw err;
  }
  if (result === undefined) {
    await update.failed(errors.notFound('path:sso_provider_id').message);
    return result;
  }
  if (result instanceof UpstreamAnswer && (result.status < 200 || result.status > 299)) {
    await update.failed(`the service answered ${result.status}`);
    return result;
  }
  input.committed(result);
  await update.succeeded(
    result instanceof UpstreamAnswer ? { provider: undefined, changed: requested } : outcomeOf(result),
  );
  return result;
}

/** What a committed change did, as the trail records it. */
function outcomeOf(result: SsoProviderUpdate): UpdateOutcome {
  const { provider, changed } = result;
  return { provider: { id: provider.id, name: provider.name }, changed: auditedChanges(changed) };
}

/** Whether `err` leaves it unknown whether the change was made: a request an upstream took and did not answer. */
function outcomeUnknown(err: unknown, backend: SsoProvidersBackend, call: BackendCall): boolean {
  if (backend.relays !== true) return false;
  if (err instanceof GatewayError && err.code.startsWith('GW_UPSTREAM_')) return !NOT_SENT.has(err.code);
  return call.signal.aborted;
}

/** The public message of `err`, as its answer will say it. */
function messageOf(err: unknown, signal: AbortSignal): string {
  if (err instanceof GatewayError) return err.message;
  if (signal.aborted && signal.reason instanceof GatewayError) return signal.reason.message;
  return errors.internal().message;
}
