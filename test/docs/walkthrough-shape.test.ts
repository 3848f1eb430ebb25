// How the walk-through test reads the docs (./walkthrough.ts): statements and their promised
// answers, and what an answer must be to match one.
import { errorIn, expectedShape, matchShape, shellBlocks, statements } from './walkthrough.js';

const differences = (actual: unknown, promised: string) => matchShape(actual, expectedShape(promised));

test('a block is cut into statements: continuations, functions, and the answers promised after them or on their line', () => {
  const md = [
    'text',
    '<!-- walkthrough: demo -->',
    '```sh',
    'curl -s -X POST $BASE/x \\',
    "  -d '{\"a\":1}'   # not an answer: prose",
    '# {"id":"466b…",',
    '#  "status":"PENDING",…}',
    '# and a remark',
    'f() {  # a function',
    '  echo "# {not a comment}"',
    '}',
    'g() { echo one; }',
    'f x                # {"statusCode":400,"message":"Wallet is not active"}   (trailing words)',
    '```',
    '<!-- not run: it waits -->',
    '```sh',
    'sleep 300',
    '```',
    '```ts',
    'const x = 1;',
    '```',
  ].join('\n');
  const blocks = shellBlocks('X.md', md);
  expect(blocks.map((b) => [b.line, b.walkthrough, b.notRun])).toEqual([
    [3, 'demo', undefined],
    [16, undefined, 'it waits'],
  ]);
  expect(statements(blocks[0]!)).toEqual([
    { line: 4, command: "curl -s -X POST $BASE/x \\\n  -d '{\"a\":1}'   # not an answer: prose", expected: ['{"id":"466b…",\n "status":"PENDING",…}'] },
    { line: 9, command: 'f() {  # a function\n  echo "# {not a comment}"\n}', expected: [] },
    { line: 12, command: 'g() { echo one; }', expected: [] },
    { line: 13, command: 'f x                # {"statusCode":400,"message":"Wallet is not active"}   (trailing words)', expected: ['{"statusCode":400,"message":"Wallet is not active"}   (trailing words)'] },
  ]);
});

test('an answer matches its promise: literal values as written, generated ones by format, "…" for what differs', () => {
  const promised = '{"id":"466b1dd2-…","status":"PENDING","amount":12.5,…,"transactionId":null,"paymentUrl":"http://localhost:3000/pay/q7Hc2LmX9vRt4WbN8yKd1ZpA","message":"Payment …"}';
  const answer = {
    id: '0b8c2f4e-1d2a-4c1b-9a55-3e1f0c2d9b7a',
    status: 'PENDING',
    amount: 12.5,
    currency: 'ETB',
    transactionId: null,
    paymentUrl: 'http://localhost:3000/pay/AfAhJyzR616JNhyV4e-b96yj',
    message: 'Payment request created',
  };
  expect(differences(answer, promised)).toEqual([]);
  expect(differences({ ...answer, status: 'APPROVED' }, promised)).toEqual(['$.status: expected "PENDING", got "APPROVED"']);
  expect(differences({ ...answer, amount: 12.25 }, promised)).toEqual(['$.amount: expected 12.5, got 12.25']);
  expect(differences({ ...answer, transactionId: 'x' }, promised)).toEqual(['$.transactionId: expected null, got "x"']);
  expect(differences({ ...answer, paymentUrl: 'http://127.0.0.1:9/pay/abc' }, promised)).toHaveLength(1);
  expect(differences({ ...answer, message: 'Created' }, promised)).toHaveLength(1);
  const { status: _status, ...withoutStatus } = answer;
  expect(differences(withoutStatus, promised)).toEqual(['$.status: missing (documented as "PENDING")']);
});

test('an object written without "…" is every key the answer has; an error answer does not match a success', () => {
  expect(differences({ walletId: 'wlt_l1XN6idVg9yuDVSg5z7PBL0b' }, '{"walletId":"wlt_Q2w…"}')).toEqual([]);
  expect(differences({ walletId: 'wlt_a', extra: 1 }, '{"walletId":"wlt_…"}')).toEqual(['$: keys the docs do not show (add them, or "…"): extra']);
  expect(differences({ statusCode: 422, message: 'Idempotency-Key was already used with a different request' }, '{"success":true,…}')).toEqual([
    '$.success: missing (documented as true)',
  ]);
  expect(differences({ data: [{ id: 'a', amount: 37.5 }], hasMore: false }, '{"data":[{"id":"0f6e…","amount":37.5,…}],…}')).toEqual([]);
  expect(differences({ data: [], hasMore: false }, '{"data":[{"id":"0f6e…","amount":37.5,…}],…}')).toEqual(['$.data: expected 1 items, got 0: []']);
});

test('without a promise, an answer must not be an error', () => {
  expect(errorIn('{"statusCode":422,"message":"Idempotency-Key was already used with a different request"}')).toMatch(/422/);
  expect(errorIn('{"errors":[{"message":"id must be a UUID"}],"data":null}')).toMatch(/UUID/);
  expect(errorIn('{"data":{"approvePaymentRequest":{"status":"APPROVED"}}}')).toBeUndefined();
  expect(errorIn('balance_transaction_id,type\r\n')).toBeUndefined();
});
