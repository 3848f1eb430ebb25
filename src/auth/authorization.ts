import { createParameterDecorator, type AuthChecker } from 'type-graphql';
import type { Context } from '../context.js';
import { AppError } from '../errors.js';
import type { Principal } from './principal.js';

/** Who may call an operation: `@Authorized(Role.DEVELOPER)` on the resolver method. */
export enum Role {
  DEVELOPER = 'developer',
  USER = 'user',
  ADMIN = 'admin',
}

/** What a caller without the role is told: nothing sent (401) or the wrong kind of credential (403). */
const REFUSALS: Record<Role, { missing: string; wrong: string }> = {
  [Role.DEVELOPER]: { missing: 'Missing bearer token', wrong: 'This operation needs a secret key' },
  [Role.USER]: { missing: 'Missing access token', wrong: 'This operation needs a user access token' },
  [Role.ADMIN]: { missing: 'Missing admin token', wrong: 'This operation needs the admin token' },
};

/** Throws UNAUTHENTICATED or FORBIDDEN unless the principal holds one of the roles. */
export function requireRole(principal: Principal, roles: readonly Role[]): void {
  if (roles.some((role) => role === principal.kind)) return;
  const refusal = REFUSALS[roles[0] ?? Role.ADMIN];
  if (principal.kind === 'anonymous') throw new AppError('UNAUTHENTICATED', refusal.missing);
  throw new AppError('FORBIDDEN', refusal.wrong);
}

/** The one auth checker behind every `@Authorized` (type-graphql). */
export const authChecker: AuthChecker<Context, Role> = ({ context }, roles) => {
  requireRole(context.principal, roles);
  return true;
};

type PrincipalOf<K extends Principal['kind']> = Extract<Principal, { kind: K }>;

/** The principal of a role that `requireRole` has established (the role names its kind). */
function principalOf<K extends Principal['kind']>(ctx: Context, _kind: K, role: Role): PrincipalOf<K> {
  requireRole(ctx.principal, [role]);
  return ctx.principal as PrincipalOf<K>;
}

/** The calling developer (`@Authorized(Role.DEVELOPER)` has checked it). */
export const CurrentDeveloper = (): ReturnType<typeof createParameterDecorator> =>
  createParameterDecorator<Context>(({ context }) => principalOf(context, 'developer', Role.DEVELOPER));

/** The calling wallet user (`@Authorized(Role.USER)` has checked it). */
export const CurrentUser = (): ReturnType<typeof createParameterDecorator> =>
  createParameterDecorator<Context>(({ context }) => principalOf(context, 'user', Role.USER));

/** The user behind a subscription's context (a subscribe function runs before any resolver middleware). */
export const userOf = (ctx: Context): PrincipalOf<'user'> => principalOf(ctx, 'user', Role.USER);
