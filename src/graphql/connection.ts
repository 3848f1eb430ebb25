import { Field, ObjectType, type ClassType } from 'type-graphql';
import type { Page } from '../db/pagination.js';

/** Declares the GraphQL connection type of one node type. */
export function Connection<T extends object>(Node: ClassType<T>, name: string): ClassType<Page<T>> {
  @ObjectType(name)
  class ConnectionClass implements Page<T> {
    @Field(() => [Node])
    nodes!: T[];

    @Field(() => String, { nullable: true, description: 'Pass as `after` for the next page; null at the end.' })
    nextCursor!: string | null;
  }
  return ConnectionClass;
}
