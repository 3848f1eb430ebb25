// A GraphQL document is bounded before it is parsed, on every door (#18 finding 2): deeply
// nested brackets overflowed graphql-js's recursive parser and answered INTERNAL_SERVER_ERROR.
import { startTestApp, factories, gql, http, type TestApp } from '../helpers/app.js';
import { wsClient } from '../helpers/ws.js';
import { documentProblem, MAX_DOCUMENT_BYTES, MAX_DOCUMENT_NESTING, MAX_DOCUMENT_TOKENS } from '../../src/graphql/document-limits.js';

let app: TestApp;
let userToken: string;
beforeAll(async () => {
  app = await startTestApp();
  userToken = (await factories(app).user()).token;
});
afterAll(async () => {
  await app.close();
});

const nestedList = (n: number, closed = true) => `{ walletId(identifier: ${'['.repeat(n)}${closed ? ']'.repeat(n) : ''}) { walletId } }`;
const nestedSelection = (n: number) => `{ ${'myWallet { '.repeat(n)}balance${' }'.repeat(n)} }`;

/** A refused document: 400 with a coded GraphQL error naming the limit; never a 5xx code, never a stack. */
function expectRefused(res: { status: number; body: any }, limit: RegExp) {
  expect(res.status).toBe(400);
  expect(res.body.errors).toHaveLength(1);
  expect(res.body.errors[0].message).toMatch(limit);
  expect(res.body.errors[0].extensions).toEqual({ code: 'GRAPHQL_PARSE_FAILED', statusCode: 400 });
  expect(JSON.stringify(res.body)).not.toMatch(/INTERNAL_SERVER_ERROR|RangeError|call stack/);
}

describe('over HTTP', () => {
  test.each([
    ['60,000 unclosed list brackets in one argument', nestedList(60_000, false)],
    ['30,000 nested list brackets, closed', nestedList(30_000)],
    ['2,000 nested list brackets (already past what the parser survives)', nestedList(2_000)],
    ['2,000 nested selections', nestedSelection(2_000)],
  ])('%s: 400 GRAPHQL_PARSE_FAILED, not an internal error', async (_name, query) => {
    expectRefused(await gql(app.baseUrl, query, {}, userToken), new RegExp(`deeper than ${MAX_DOCUMENT_NESTING} levels|larger than`));
  });

  test('the same limit holds for a GET', async () => {
    const res = await http(app.baseUrl, `/graphql?query=${encodeURIComponent(nestedList(1_000))}`, { headers: { 'apollo-require-preflight': 'true', accept: 'application/json' } });
    expectRefused(res, /deeper than 64 levels/);
  });

  test('a document over the byte limit, or over the token limit, is refused the same way', async () => {
    const long = `{ myWallet { balance } } # ${'x'.repeat(MAX_DOCUMENT_BYTES)}`;
    expectRefused(await gql(app.baseUrl, long, {}, userToken), /larger than 16384 bytes/);
    const res = await gql(app.baseUrl, `{ myWallet { ${'b '.repeat(MAX_DOCUMENT_TOKENS + 1)}} }`, {}, userToken);
    expect(res.status).toBe(400);
    expect(res.body.errors[0].message).toMatch(/more tha[nt] 5000 tokens/);
    expect(res.body.errors[0].extensions.code).toBe('GRAPHQL_PARSE_FAILED');
  });

  test('nesting up to the limit, and brackets inside strings and comments, are fine', async () => {
    const deepValue = `${'['.repeat(MAX_DOCUMENT_NESTING - 2)}"x"${']'.repeat(MAX_DOCUMENT_NESTING - 2)}`;
    const res = await gql(app.baseUrl, `{ walletId(identifier: ${deepValue}) { walletId } }`, {}, userToken);
    // Parsed, then refused by validation (a list is not a String), not by the document limit.
    expect(res.status).toBe(400);
    expect(res.body.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    const inStrings = `# ${'['.repeat(500)}\n{ myWallet { balance } } # ${'{'.repeat(200)}`;
    const ok = await gql(app.baseUrl, inStrings, {}, userToken);
    expect(ok.status).toBe(200);
    expect(ok.body.data.myWallet.balance).toEqual(expect.any(Number));
  });
});

describe('over WebSocket', () => {
  test('a deeply nested subscribe is an error for that operation; the socket stays open and serves the next one', async () => {
    const closes: number[] = [];
    const client = wsClient(app.baseUrl, userToken, { onClose: (code) => closes.push(code) });
    try {
      const refused = await new Promise<unknown[]>((resolve) => {
        client.subscribe({ query: `subscription { paymentRequested(x: ${'['.repeat(5_000)}${']'.repeat(5_000)}) { id } }` }, {
          next: () => resolve(['unexpected next']),
          error: (errors) => resolve(errors as unknown[]),
          complete: () => resolve(['unexpected complete']),
        });
      });
      expect(refused).toEqual([expect.objectContaining({ message: expect.stringMatching(/deeper than 64 levels/), extensions: { code: 'GRAPHQL_PARSE_FAILED', statusCode: 400 } })]);
      const answered = await new Promise<unknown>((resolve, reject) => {
        client.subscribe({ query: '{ myWallet { balance } }' }, { next: (r) => resolve(r), error: reject, complete: () => undefined });
      });
      expect(answered).toEqual({ data: { myWallet: { balance: expect.any(Number) } } });
      expect(closes).toEqual([]);
    } finally {
      await client.dispose();
    }
  });
});

describe('documentProblem (the scan before parsing)', () => {
  test.each([
    ['"""block with """ { { { """'],
    ['"escaped \\" [[[["'],
    ['# comment [[[[\n{ a }'],
    [`{ a(x: "${'['.repeat(100)}") }`],
  ])('skips strings, block strings and comments: %p', (source) => {
    expect(documentProblem(source)).toBeUndefined();
  });

  test('counts {, [ and ( together', () => {
    const mixed = '{('.repeat(MAX_DOCUMENT_NESTING / 2) + ')}'.repeat(MAX_DOCUMENT_NESTING / 2);
    expect(documentProblem(mixed)).toBeUndefined();
    expect(documentProblem(`[${mixed}]`)).toMatch(/deeper than 64/);
  });

  test('counts bytes, not characters', () => {
    expect(documentProblem(`# ${'é'.repeat(MAX_DOCUMENT_BYTES / 2)}`)).toMatch(/larger than/);
  });
});
