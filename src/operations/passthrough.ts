/**
 * Pass-through: any other authenticated `/api/v2` request of an identity holding the `passthrough`
 * permission, forwarded to the service unchanged (contract §5), so that the gateway can stand in
 * front of the whole API.
 */
import type { PassthroughBackend } from '../backends/passthrough/proxy.js';
import { deadlineOf } from '../http/deadline.js';
import type { Operation } from './operation.js';

/** The operation on `backend`. */
export function createPassthroughOperation(deps: { backend: PassthroughBackend }): Operation {
  return {
    id: 'passthrough',
    permission: 'passthrough',
    handle: (ctx) => deps.backend.forward(ctx, deadlineOf(ctx)),
  };
}
