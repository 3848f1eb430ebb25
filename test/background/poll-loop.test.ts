import { PollLoop } from '../../src/background/poll-loop.js';

// The one loop type of the background work (outbox reader, webhook worker, expiry sweeper,
// maintenance, scheduled ledger check, WebSocket lease renewal). Driven by wake(): the interval
// is an hour, so no timer decides anything here.
const HOUR = 3_600_000;

/** Yields to the event loop until `check` holds; fails (rather than spinning forever) after 10,000 turns. */
async function turnsUntil(check: () => boolean, what: string): Promise<void> {
  for (let turn = 0; !check(); turn++) {
    if (turn >= 10_000) throw new Error(`${what}: not after 10,000 event-loop turns`);
    await new Promise((r) => setImmediate(r));
  }
}

/** A pass that waits for the test to let it finish, and counts its runs. */
function gatedPasses(results: boolean[] = []) {
  const runs: Array<() => void> = [];
  let started = 0;
  const pass = async (): Promise<boolean> => {
    started++;
    await new Promise<void>((resolve) => runs.push(resolve));
    return results.shift() ?? false;
  };
  const finishNext = async (): Promise<void> => {
    await turnsUntil(() => runs.length > 0, 'a pass waiting to finish');
    runs.shift()!();
    await new Promise((r) => setImmediate(r));
  };
  return { pass, finishNext, started: () => started, waiting: () => runs.length };
}

test('wake-ups during a pass cause exactly one more pass', async () => {
  const g = gatedPasses();
  const loop = new PollLoop(g.pass, HOUR, () => undefined);
  loop.start({ now: true });
  await g.finishNext();
  expect(g.started()).toBe(1);
  loop.wake();
  loop.wake();
  loop.wake();
  expect(g.started()).toBe(2);
  await g.finishNext(); // the second pass ends; three wake-ups came during it: one more pass
  expect(g.started()).toBe(3);
  await g.finishNext();
  expect(g.started()).toBe(3);
  expect(g.waiting()).toBe(0);
  await loop.stop();
});

test('a pass that says there is more is followed by another at once', async () => {
  const g = gatedPasses([true, true, false]);
  const loop = new PollLoop(g.pass, HOUR, () => undefined);
  loop.start({ now: true });
  await g.finishNext();
  await g.finishNext();
  await g.finishNext();
  expect(g.started()).toBe(3);
  expect(g.waiting()).toBe(0);
  await loop.stop();
});

test('a failing pass is reported and the next wake-up runs again', async () => {
  const errors: unknown[] = [];
  let calls = 0;
  const loop = new PollLoop(
    async () => {
      calls++;
      if (calls === 1) throw new Error('database unreachable');
      return false;
    },
    HOUR,
    (err) => errors.push(err),
  );
  loop.start({ now: true });
  await new Promise((r) => setImmediate(r));
  expect(errors.map((e) => (e as Error).message)).toEqual(['database unreachable']);
  loop.wake();
  await new Promise((r) => setImmediate(r));
  expect(calls).toBe(2);
  await loop.stop();
});

test('stop waits for the pass in progress, and nothing runs after it', async () => {
  const g = gatedPasses([true]);
  const loop = new PollLoop(g.pass, HOUR, () => undefined);
  loop.start({ now: true });
  await turnsUntil(() => g.waiting() > 0, 'the first pass under way');
  let stopped = false;
  const stopping = loop.stop().then(() => (stopped = true));
  await new Promise((r) => setImmediate(r));
  expect(stopped).toBe(false);
  await g.finishNext(); // it said "more", but the loop is stopping
  await stopping;
  loop.wake();
  expect(g.started()).toBe(1);
});
