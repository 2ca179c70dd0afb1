/** The shape of an operation: what it needs and how it answers. */
import type { Permission } from '../config/schema.js';
import type { RequestContext } from '../http/context.js';
import type { OperationId } from '../http/route.js';

export interface Operation {
  readonly id: OperationId;
  /** The permission an identity needs (403 `not authorized` otherwise). */
  readonly permission: Permission;
  /**
   * True for an operation that needs no credentials (a public route of contract §11): its requests
   * skip authentication, the identity's rate limits and the permission. Absent: false.
   */
  readonly public?: boolean;
  /**
   * Runs the operation's own stages in the contract's order: path parameters (400) → existence (404)
   * → body validation (400/413) → the backend call, and writes the response. Errors are thrown as
   * `GatewayError`s; every backend call gets the request's `BackendCall` (`http/forwarded.ts`).
   * Returns a promise only when it waits: an answer from memory is written at once.
   */
  handle(ctx: RequestContext): void | Promise<void>;
  /** Whether what the operation holds itself can serve (the pass-through's service); absent: yes. */
  ready?(): boolean;
  /** Releases what the operation holds itself. */
  close?(): Promise<void>;
}
