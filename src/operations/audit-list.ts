/**
 * ListAuditLogs, `GET /api/v2/audit` (contract §12, with `audit.serve_api`): the audit trail answered
 * as the service answers its own, in the service's query language (`audit/query.ts`: its 400s in the
 * envelope) and its answer shape, every entry with its `hash`.
 */
import { pageBody, parseAuditQuery } from '../audit/query.js';
import type { AuditTrail } from '../audit/trail.js';
import { backendCall } from '../http/forwarded.js';
import { sendJson } from '../http/respond.js';
import type { Operation } from './operation.js';

/** The operation over `trail`. */
export function createAuditList(deps: { readonly trail: AuditTrail }): Operation {
  const { trail } = deps;
  return {
    id: 'ListAuditLogs',
    permission: 'audit:read',
    async handle(ctx) {
      const q = ctx.rawTarget.indexOf('?');
      const query = parseAuditQuery(new URLSearchParams(q === -1 ? '' : ctx.rawTarget.slice(q + 1)));
      const page = await trail.list(query, backendCall(ctx).signal);
      sendJson(ctx, 200, pageBody(page));
    },
  };
}
