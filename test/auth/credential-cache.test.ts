import { CredentialCache } from '../../src/auth/credential-cache.js';
import { sha256Hex } from '../../src/auth/hash.js';

type Verdict = { ok: boolean; owner: string };

function cacheCounting(): { cache: CredentialCache<Verdict>; loads: string[]; release: () => void } {
  const loads: string[] = [];
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const cache = new CredentialCache<Verdict>({
    ttlMs: 60_000,
    load: async (credential, hash) => {
      expect(hash).toBe(sha256Hex(credential));
      loads.push(credential);
      await gate;
      return { ok: !credential.startsWith('bad'), owner: credential.split(':')[1] ?? '' };
    },
    keep: (v) => v.ok,
  });
  return { cache, loads, release: () => release() };
}

test('concurrent checks of one credential share one load, and a kept verdict answers the next ones', async () => {
  const { cache, loads, release } = cacheCounting();
  const pending = Promise.all(Array.from({ length: 5 }, () => cache.verdict('good:a')));
  release();
  expect(await pending).toEqual(Array.from({ length: 5 }, () => ({ ok: true, owner: 'a' })));
  expect(await cache.verdict('good:a')).toEqual({ ok: true, owner: 'a' });
  expect(loads).toEqual(['good:a']);
});

test('a verdict that is not kept is checked again on the next presentation', async () => {
  const { cache, loads, release } = cacheCounting();
  release();
  expect((await cache.verdict('bad:x')).ok).toBe(false);
  expect((await cache.verdict('bad:x')).ok).toBe(false);
  expect(loads).toEqual(['bad:x', 'bad:x']);
});

test('forget drops the matching verdicts only', async () => {
  const { cache, loads, release } = cacheCounting();
  release();
  await cache.verdict('good:a');
  await cache.verdict('good:b');
  cache.forget((v) => v.owner === 'a');
  await cache.verdict('good:a');
  await cache.verdict('good:b');
  expect(loads).toEqual(['good:a', 'good:b', 'good:a']);
});
