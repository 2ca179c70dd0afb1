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
  /** A JWT's `name` claim, when it has one (the audit trail's `actor_name`). */
  readonly name?: string;
  /** A JWT's `email` claim, when it has one (the audit trail's `actor_email`). */
  readonly email?: string;
}

/**
 * Who `identity` is in the audit trail (contract §12): `id` the token id, JWT `sub` or certificate
 * subject; `name` a JWT's `name` claim, else the subject; `email` a JWT's `email` claim, else "".
 */
export function actorOf(identity: Identity): { id: string; name: string; email: string } {
  return {
    id: identity.tokenId ?? identity.subject,
    name: identity.name ?? identity.subject,
    email: identity.email ?? '',
  };
}

/** True when `identity` holds `permission` (or `*`). */
export function hasPermission(identity: Identity, permission: string): boolean {
  return identity.permissions.has('*') || identity.permissions.has(permission);
}
