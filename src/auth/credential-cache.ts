import { LRUCache } from 'lru-cache';
import { sha256Hex } from './hash.js';

export interface CredentialCacheOptions<V extends object> {
  /** How long a verdict is believed (KEY_CACHE_TTL_MS, at most 4 s: a revocation is seen within 5 s). */
  ttlMs: number;
  /** Most verdicts kept (least recently used go first). */
  max?: number;
  /** Checks a credential afresh (signature, stored row); called once for concurrent misses of one credential. */
  load(credential: string, hash: string): Promise<V>;
  /**
   * Whether a verdict is remembered. Refusals that anyone can make up (a forged or unknown
   * credential) are not: a flood of them would only push real credentials out of the cache.
   */
  keep(verdict: V): boolean;
  /** The clock ages are read from (milliseconds); `performance` unless a test injects one. */
  clock?: { now(): number };
}

/**
 * Verdicts on presented credentials (secret keys, operator tokens), remembered by the SHA-256 of
 * the whole credential for a short time, on lru-cache: a repeat costs one hash and a map look-up,
 * concurrent misses of one credential share one check (`fetchMethod`), and an entry's age counts
 * from before its check began, so a slow database read never stretches the revocation bound.
 */
export class CredentialCache<V extends object> {
  private readonly cache: LRUCache<string, V, string>;

  constructor(private readonly options: CredentialCacheOptions<V>) {
    const { ttlMs, load } = options;
    const clock = options.clock ?? performance;
    this.cache = new LRUCache<string, V, string>({
      max: options.max ?? 10_000,
      ttl: ttlMs,
      perf: clock,
      // An injected clock is read on every check (lru-cache otherwise reuses a reading for 1 ms).
      ttlResolution: options.clock ? 0 : 1,
      fetchMethod: async (hash, _stale, { options: entry, context: credential }) => {
        const started = clock.now();
        const verdict = await load(credential, hash);
        entry.ttl = Math.max(1, ttlMs - (clock.now() - started));
        return verdict;
      },
    });
  }

  /** The verdict on a presented credential: remembered (by its SHA-256), or checked now. */
  async verdict(credential: string): Promise<V> {
    const hash = sha256Hex(credential);
    const verdict = (await this.cache.fetch(hash, { context: credential }))!;
    if (!this.options.keep(verdict)) this.cache.delete(hash);
    return verdict;
  }

  /** Forgets the verdicts that match (after a revocation on this instance). */
  forget(match: (verdict: V) => boolean): void {
    for (const [hash, verdict] of this.cache.entries()) if (match(verdict)) this.cache.delete(hash);
  }
}
