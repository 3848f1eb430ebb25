import type { MiddlewareFn } from 'type-graphql';
import { badInput } from '../errors.js';

/** The name of the innermost field whose string holds a NUL character (`args` itself is nameless), or null. */
function fieldWithNul(value: unknown, name: string, depth = 0): string | null {
  if (typeof value === 'string') return value.includes('\u0000') ? name : null;
  if (depth > 16 || value === null || typeof value !== 'object' || value instanceof Date) return null;
  for (const [key, inner] of Object.entries(value)) {
    const found = fieldWithNul(inner, Array.isArray(value) ? name : key, depth + 1);
    if (found !== null) return found;
  }
  return null;
}

/**
 * PostgreSQL text cannot hold NUL: an argument with one would reach a statement and fail there
 * (a 500). Every field's arguments are refused up front instead, with BAD_USER_INPUT naming the
 * field, in the words the services use for other control characters.
 */
export const refuseNulArguments: MiddlewareFn = ({ args }, next) => {
  const field = fieldWithNul(args, 'argument');
  if (field !== null) throw badInput(`${field} must not contain control characters`);
  return next();
};
