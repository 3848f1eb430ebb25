import { serializeError } from '../../src/logger.js';

// A reason logged as `{ err: { message } }` (a background retry: leadership, NATS, payouts) is not
// an error with a stack: its line carried `"stack":""`, which log checks read as a stack trace.
test('a reason without a stack is logged without a stack key; an Error keeps its stack', () => {
  // As the log line has it.
  const reason = JSON.parse(JSON.stringify(serializeError({ message: 'timeout expired' } as Error)));
  expect(reason).toMatchObject({ message: 'timeout expired' });
  expect(reason).not.toHaveProperty('stack');
  expect(serializeError(new Error('boom')).stack).toMatch(/^Error: boom\n\s+at /);
});
