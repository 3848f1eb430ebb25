import { CredentialCache } from '../../src/auth/credential-cache.js';
import { loadConfig } from '../../src/config.js';

// The SPEC's revocation bound ("a revoked key or operator token is refused within 5 s on every
// instance") rests on one rule: a cached verdict is believed at most KEY_CACHE_TTL_MS (≤ 4 s),
// counted from before its check began. Proven here on an injected clock, so no test measures
// time; the cross-instance tests (secret-keys, operators) only wait, with a deadline, for the
// refusal this rule guarantees.

class FakeClock {
  t = 1_000_000;
  now(): number {
    return this.t;
  }
}

type Verdict = { ok: boolean };

function revocableCache(ttlMs: number) {
  const clock = new FakeClock();
  const state = { revoked: false, loads: 0, loadTakesMs: 0 };
  const cache = new CredentialCache<Verdict>({
    ttlMs,
    clock,
    load: async () => {
      state.loads++;
      const verdict = { ok: !state.revoked }; // the row as read when the check began
      clock.t += state.loadTakesMs; // a slow database read
      return verdict;
    },
    keep: () => true,
  });
  return { cache, clock, state };
}

test('a verdict is believed for exactly ttlMs: the last acceptance of a revoked credential is at ttlMs, the next check reads the row', async () => {
  const { cache, clock, state } = revocableCache(4000);
  expect(await cache.verdict('cred')).toEqual({ ok: true });
  expect(state.loads).toBe(1);
  state.revoked = true; // revoked on another instance: this cache is not told
  clock.t += 3999;
  expect(await cache.verdict('cred')).toEqual({ ok: true });
  clock.t += 1; // age 4000 = ttlMs: still believed (the bound is inclusive)
  expect(await cache.verdict('cred')).toEqual({ ok: true });
  expect(state.loads).toBe(1);
  clock.t += 1;
  expect(await cache.verdict('cred')).toEqual({ ok: false });
  expect(state.loads).toBe(2);
});

test('the age counts from before the check began: a slow read does not stretch the bound', async () => {
  const { cache, clock, state } = revocableCache(4000);
  const began = clock.t;
  state.loadTakesMs = 1500;
  expect(await cache.verdict('cred')).toEqual({ ok: true });
  expect(clock.t).toBe(began + 1500);
  state.revoked = true;
  state.loadTakesMs = 0;
  clock.t = began + 4000;
  expect(await cache.verdict('cred')).toEqual({ ok: true });
  expect(state.loads).toBe(1);
  clock.t = began + 4001; // 2501 ms after the verdict was stored, 4001 ms after its check began
  expect(await cache.verdict('cred')).toEqual({ ok: false });
  expect(state.loads).toBe(2);
});

test('KEY_CACHE_TTL_MS cannot exceed 4000 ms (so the bound, with a check of up to 1 s, stays under 5 s); the default is 2000 ms', () => {
  expect(loadConfig({}).keyCacheTtlMs).toBe(2000);
  expect(loadConfig({ KEY_CACHE_TTL_MS: '4000' }).keyCacheTtlMs).toBe(4000);
  expect(() => loadConfig({ KEY_CACHE_TTL_MS: '4001' })).toThrow(/KEY_CACHE_TTL_MS/);
});
