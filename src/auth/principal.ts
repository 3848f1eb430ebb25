/** Who is calling, as established by one of the doors. */
export type Principal =
  | { kind: 'developer'; developerId: string; keyId: string }
  | { kind: 'user'; userId: string }
  | { kind: 'admin' }
  | { kind: 'anonymous' };

export const ANONYMOUS: Principal = { kind: 'anonymous' };
