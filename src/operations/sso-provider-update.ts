/**
 * Update SSO Provider: a multipart form that renames a provider, replaces its SAML metadata and sets
 * its auto-provisioning. Every check passes before the backend is asked to write; a rejected request
 * changes nothing.
 *
 * Order of faults: the form's structure first, in form order (framing, limits, unknown, repeated, wrong
 * kind, not UTF-8; see `readForm`); then each part's value, in form order (name rules, bool or int
 * conversion, metadata); then the auto-provision set as a whole (a missing part, in the order enabled,
 * default_role_id, role_provision; then whether the role exists).
 */
import { metadataSha256, requestedChanges } from '../audit/fields.js';
import type { AuditTrail } from '../audit/trail.js';
import type {
  AutoProvision,
  SsoProvider,
  SsoProviderPatch,
  SsoProvidersBackend,
  SsoProviderUpdate,
} from '../backends/sso-providers/backend.js';
import type { Config } from '../config/schema.js';
import { errors } from '../errors.js';
import type { BackendCall } from '../backends/backend-call.js';
import type { RequestContext } from '../http/context.js';
import { backendCall } from '../http/forwarded.js';
import { relay, sendJson } from '../http/respond.js';
import { UpstreamAnswer } from '../upstream/answer.js';
import type { Logger } from '../observability/logger.js';
import { type FormPart, type PartKind, readForm } from '../validate/form.js';
import { ConcurrencyLimit } from '../validate/concurrency-limit.js';
import { parseId } from '../validate/ids.js';
import { parseSamlMetadata } from '../validate/saml.js';
import { auditedUpdate } from './audited-update.js';
import type { Operation } from './operation.js';

const ENABLED = 'config.auto_provision.enabled';
const ROLE_ID = 'config.auto_provision.default_role_id';
const ROLE_PROVISION = 'config.auto_provision.role_provision';

const PARTS: Readonly<Record<string, PartKind>> = {
  name: 'text',
  metadata: 'file',
  [ENABLED]: 'text',
  [ROLE_ID]: 'text',
  [ROLE_PROVISION]: 'text',
};

const TRUE = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const FALSE = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);
const INTEGER = /^[+-]?[0-9]+$/;
const MAX_INT32 = 2_147_483_647;
const INT64_MAX = 9_223_372_036_854_775_807n;
const MAX_NAME = 255;
/**
 * Forms read and validated at once, per process: one file read back from disk while another is
 * parsed. A metadata file is held about three times over while it is validated, so 20 concurrent
 * 1 MiB uploads would otherwise hold some 60 MiB at once (README, Performance: Memory).
 */
const VALIDATING = 2;

/** The operation on `backend`, with the form limits of the configuration and its audit trail, if any. */
export function createSsoProviderUpdate(deps: {
  backend: SsoProvidersBackend;
  forms: Config['forms'];
  logger: Logger;
  audit?: AuditTrail;
}): Operation {
  const { backend, forms, logger, audit: trail } = deps;
  const validating = new ConcurrencyLimit(VALIDATING);
  return {
    id: 'UpdateSSOProvider',
    permission: 'sso_providers:write',
    async handle(ctx: RequestContext) {
      const call = backendCall(ctx);
      const id = parseId(ctx.route?.params.sso_provider_id, 'sso_provider_id');
      let found: SsoProvider | undefined;
      if (backend.exists) {
        if (!(await backend.exists(id, call))) throw errors.notFound('path:sso_provider_id');
      } else {
        found = await backend.get(id, call);
        if (found === undefined) throw errors.notFound('path:sso_provider_id');
      }

      // Waiting for its turn at the limit is bounded by the request's deadline, like its other work.
      const { patch, sha256 } = await readPatch(ctx, forms, backend, call, validating, trail !== undefined);

      // The fields the form asks to set, as the audit names them.
      const requested = requestedChanges({
        name: patch.name !== undefined,
        metadata: patch.metadata !== undefined,
        autoProvision: patch.autoProvision !== undefined,
      });
      // The audit line of a change, once it is made: who, which provider, which fields.
      const committed = (result: SsoProviderUpdate | UpstreamAnswer) => {
        if (!(result instanceof UpstreamAnswer)) {
          if (result.changed.length > 0) audit(logger, ctx, id, result.changed);
        } else if (result.status >= 200 && result.status < 300) {
          // The upstream applied it: the audit names the fields the form asked to set.
          audit(logger, ctx, id, requested);
        }
      };
      const result = trail
        ? await auditedUpdate({
            trail,
            backend,
            ctx,
            call,
            ssoProviderId: id,
            patch,
            requested,
            found,
            metadataSha256: sha256,
            committed,
          })
        : await backend.update(id, patch, call);
      if (result instanceof UpstreamAnswer) {
        if (!trail) committed(result);
        return relay(ctx, result);
      }
      if (!result) throw errors.notFound('path:sso_provider_id');
      if (!trail) committed(result);
      sendJson(ctx, 200, { data: result.provider });
    },
  };
}

/** The audit line of a change: who, which provider, which fields. */
function audit(logger: Logger, ctx: RequestContext, id: number, fields: string[]): void {
  logger.info(
    {
      audit: 'sso_provider_update',
      request_id: ctx.id,
      subject: ctx.identity?.subject,
      sso_provider_id: id,
      fields,
    },
    'sso provider updated',
  );
}

/**
 * The form read and validated into a patch. Its own function so that the parts (a metadata file
 * may be megabytes) are garbage as soon as the patch is made, not held while the backend writes.
 * Reading and validating the form takes a place under `limit`; asking the backend whether the default
 * role exists does not (a slow backend never holds up other uploads' validation).
 */
async function readPatch(
  ctx: RequestContext,
  forms: Config['forms'],
  backend: SsoProvidersBackend,
  call: BackendCall,
  limit: ConcurrencyLimit,
  audited: boolean,
): Promise<{ patch: SsoProviderPatch; sha256: string | undefined }> {
  const { signal } = call;
  const { patch, roleId, sha256 } = await limit.run(signal, async () => {
    const parts = await readForm({
      contentType: ctx.req.headers['content-type'],
      body: ctx.body,
      parts: PARTS,
      limits: forms,
      signal,
    });
    // The audit trail names a new metadata file by its digest, never by its content.
    const file = audited ? parts.find((p) => p.kind === 'file') : undefined;
    return { ...toPatch(parts), sha256: file?.kind === 'file' ? metadataSha256(file.data) : undefined };
  });
  if (roleId !== undefined && !(await backend.roleExists(roleId, call))) {
    throw errors.invalidParameter(ROLE_ID);
  }
  return { patch, sha256 };
}

/**
 * The validated change the form asks for, and the default role whose existence the backend must
 * still confirm (when the form sets `auto_provision`).
 */
function toPatch(parts: FormPart[]): { patch: SsoProviderPatch; roleId?: number } {
  const patch: SsoProviderPatch = {};
  const auto: Partial<AutoProvision> = {};
  for (const part of parts) {
    if (part.kind === 'file') {
      const { idpIssuerUri, idpSsoUri, text } = parseSamlMetadata(part.data);
      patch.metadata = { xml: text.replace(/^\uFEFF/, ''), idpIssuerUri, idpSsoUri };
    } else if (part.name === 'name') {
      patch.name = checkName(part.value);
    } else if (part.name === ROLE_ID) {
      auto.default_role_id = toInt(part.name, part.value);
    } else {
      auto[part.name === ENABLED ? 'enabled' : 'role_provision'] = toBool(part.name, part.value);
    }
  }
  if (Object.keys(auto).length === 0) return { patch };

  if (auto.enabled === undefined) throw errors.missingPart(ENABLED);
  if (auto.default_role_id === undefined) throw errors.missingPart(ROLE_ID);
  if (auto.role_provision === undefined) throw errors.missingPart(ROLE_PROVISION);
  const roleId = auto.default_role_id;
  if (roleId < 1 || roleId > MAX_INT32) throw errors.invalidParameter(ROLE_ID);
  patch.autoProvision = {
    enabled: auto.enabled,
    default_role_id: roleId,
    role_provision: auto.role_provision,
  };
  return { patch, roleId };
}

/** The trimmed name: 1 to 255 code points, no control characters. */
function checkName(value: string): string {
  const name = value.trim();
  if (name === '') throw errors.invalidName('must not be empty');
  if ([...name].length > MAX_NAME) throw errors.invalidName(`must be at most ${MAX_NAME} characters`);
  if (/\p{Cc}/u.test(name)) throw errors.invalidName('must not contain control characters');
  return name;
}

function toBool(part: string, value: string): boolean {
  if (TRUE.has(value)) return true;
  if (FALSE.has(value)) return false;
  throw errors.notBool(part);
}

/**
 * An integer as text, read as the reference's `strconv.Atoi` reads it: a sign is allowed, and a value
 * beyond 64 bits cannot be converted. Whether it names a role is checked later.
 */
function toInt(part: string, value: string): number {
  if (!INTEGER.test(value)) throw errors.notInt(part);
  const big = BigInt(value);
  if (big > INT64_MAX || big < -INT64_MAX - 1n) throw errors.notInt(part);
  return Number(big);
}
