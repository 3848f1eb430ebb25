import type { ContainerType, ResolverData } from 'type-graphql';

/** A class type-graphql asks the container for (a resolver or a class middleware). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- type-graphql's own ContainerType signature
type Resolvable = new (...args: any[]) => object;

/**
 * The resolvers (and class middlewares) of one gateway, made at its start with the services they
 * need in their constructors (src/resolvers.ts): type-graphql asks here for the instance of each
 * class it resolves with (`buildSchema({ container })`, scoped by the operation's context, since
 * one schema serves every gateway of a process). A class the schema uses but the gateway did not
 * make is refused when the gateway starts (`requireAll`), not at its first call.
 */
export class ResolverContainer implements ContainerType {
  private readonly instances = new Map<Resolvable, object>();

  constructor(instances: readonly object[]) {
    for (const instance of instances) this.instances.set(instance.constructor as Resolvable, instance);
  }

  get(someClass: Resolvable): object {
    const instance = this.instances.get(someClass);
    if (!instance) throw new Error(`no instance of ${someClass.name} was made for this gateway (src/resolvers.ts)`);
    return instance;
  }

  /** Throws unless every one of `classes` has its instance here. */
  requireAll(classes: readonly Resolvable[]): void {
    const missing = classes.filter((c) => !this.instances.has(c)).map((c) => c.name);
    if (missing.length > 0) throw new Error(`resolvers without an instance (src/resolvers.ts): ${missing.join(', ')}`);
  }
}

/** type-graphql's scoped container: the gateway's own, from the operation's context. */
export const containerOf = ({ context }: ResolverData<{ container: ResolverContainer }>): ResolverContainer => context.container;
