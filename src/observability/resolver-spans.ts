import type { GraphQLResolveInfo } from 'graphql';
import { getMetadataStorage, type MiddlewareFn } from 'type-graphql';
import { inSpan } from './tracing.js';

/** `Type.field` of every `@FieldResolver` (the admin graph's loaders): fields that do work of their own. */
function fieldResolverNames(): Set<string> {
  const storage = getMetadataStorage();
  const names = new Set<string>();
  for (const fr of storage.fieldResolvers) {
    if (fr.kind !== 'external') continue;
    const target = fr.getObjectType?.();
    const type = storage.objectTypes.find((o) => o.target === target);
    if (type) names.add(`${type.name}.${fr.schemaName}`);
  }
  return names;
}

/**
 * A span per non-trivial resolver: the root fields of queries and mutations, and the field
 * resolvers that load data (`@FieldResolver`). Property reads get none, and neither does the
 * per-event mapping of a subscription (the WebSocket door traces the subscribe). Added to the
 * schema only when tracing is on (src/schema.ts), so it costs nothing otherwise.
 */
export function traceResolvers(): MiddlewareFn<object> {
  let traced: Set<string> | undefined;
  const isTraced = (info: GraphQLResolveInfo): boolean => {
    if (info.operation.operation === 'subscription') return false;
    if (info.path.prev === undefined) return true;
    traced ??= fieldResolverNames();
    return traced.has(`${info.parentType.name}.${info.fieldName}`);
  };
  return ({ info }, next) => {
    if (!isTraced(info)) return next();
    const field = `${info.parentType.name}.${info.fieldName}`;
    return inSpan(`resolve ${field}`, { attributes: { 'graphql.field.name': info.fieldName, 'graphql.field.parent_type': info.parentType.name } }, () =>
      Promise.resolve(next()),
    );
  };
}
