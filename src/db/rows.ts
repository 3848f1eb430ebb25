import type { EntityClass, EntityData, MikroORM } from '@mikro-orm/core';

declare const detached: unique symbol;

/**
 * An entity's fields as a plain, read-only object: not an instance of the entity class, not
 * managed by any EntityManager, never flushed. Passing one where the entity is expected reads it;
 * changing or persisting it is a type error.
 */
export type Detached<T extends object> = Readonly<T> & { readonly [detached]: true };

/** Maps a row (column names) to an entity's fields with the ORM's own column mapping, as a plain object. */
export type RowMapper = <T extends object>(entity: EntityClass<T>, row: Record<string, unknown>) => Detached<T>;

/**
 * The ORM's column mapping as a function of the row alone (the metadata is read once the ORM is
 * up; no EntityManager, connection or identity map is involved): no tracking setters, no
 * change-tracking snapshot, nothing for a flush to compare (#10).
 */
export function rowMapper(orm: MikroORM): RowMapper {
  const driver = orm.em.getDriver();
  const metadata = orm.getMetadata();
  return <T extends object>(entity: EntityClass<T>, row: Record<string, unknown>): Detached<T> =>
    driver.mapResult(row as EntityData<T>, metadata.get(entity.name) as never) as Detached<T>;
}
