/** Who is calling, as established by one of the doors. */
export type Principal =
  | { kind: 'developer'; developerId: string; keyId: string }
  | { kind: 'user'; userId: string; /** When the access token expires (epoch ms); long-lived sockets end with it. */ expiresAt?: number }
  | { kind: 'admin'; /** Which operator is calling: an operator token's, or root (ADMIN_TOKEN) / cli (id null). */ operator: AdminOperator }
  | { kind: 'anonymous' };

/** The operator behind an admin call (see src/operators). */
export interface AdminOperator {
  readonly id: string | null;
  readonly name: string;
}

export const ANONYMOUS: Principal = { kind: 'anonymous' };

/** A caller with a secret key. */
export type DeveloperPrincipal = Extract<Principal, { kind: 'developer' }>;
/** A caller with a user access token. */
export type UserPrincipal = Extract<Principal, { kind: 'user' }>;
