/** Who made a request, as the authenticate stage established it. */
export interface Identity {
  /** The name of the scheme that established it: `signature`, `bearer`, `client_certificate`. */
  readonly scheme: string;
  /** The token's configured subject, the JWT's `sub`, or the certificate entry's subject. Safe to log. */
  readonly subject: string;
  /** The signed-request token id (public, safe to log). */
  readonly tokenId?: string;
  /**
   * The identity's canonical form, unique across schemes: `token:<lower-case token id>` or
   * `jwt:<iss> <sub>` or `cert:<subject>`. What is kept per identity (a cache, a count) is keyed by it.
   */
  readonly principal: string;
  /** What the identity may do; `*` grants everything. */
  readonly permissions: ReadonlySet<string>;
}

/** True when `identity` holds `permission` (or `*`). */
export function hasPermission(identity: Identity, permission: string): boolean {
  return identity.permissions.has('*') || identity.permissions.has(permission);
}
