/**
 * The REST door rewords GraphQL's variable-coercion errors (a body that does not fit the input
 * type) into a client's terms. The messages here are produced by graphql-js itself, through the
 * real schema and the real operation of POST /wallet/request-payment, so a change of wording in
 * graphql-js fails this file instead of silently turning every answer into "Invalid request".
 */
import { readFileSync } from 'node:fs';
import { buildSchema, graphql, type GraphQLSchema } from 'graphql';
import { translateCoercionError } from '../../src/rest/graphql-errors.js';
import { REST_ROUTES } from '../../src/rest/routes.js';

const SCHEMA = buildSchema(readFileSync(new URL('../../schema/schema.graphql', import.meta.url), 'utf8'));
const REQUEST_PAYMENT = REST_ROUTES.find((r) => r.method === 'POST' && r.path === '/wallet/request-payment')!;

/** A schema with the scalar kinds the REST operations do not use, for the remaining wordings. */
const PROBE = buildSchema(`
  enum Colour { RED GREEN }
  input Probe { count: Int, flag: Boolean, ref: ID, colour: Colour }
  type Query { probe(input: Probe!): Boolean }
`);

/** The variable-coercion errors graphql-js reports for `variables` (none for a fitting value). */
async function coercionErrors(schema: GraphQLSchema, operation: string, variables: Record<string, unknown>): Promise<string[]> {
  const result = await graphql({ schema, source: operation, variableValues: variables });
  return (result.errors ?? []).map((e) => e.message).filter((m) => m.startsWith('Variable "$'));
}

/** The one coercion message of a request-payment body, and what the REST door says instead. */
async function restMessage(body: unknown): Promise<{ graphql: string; rest: string | undefined }> {
  const errors = await coercionErrors(SCHEMA, REQUEST_PAYMENT.operation, REQUEST_PAYMENT.variables({}, body, null));
  expect(errors).toHaveLength(1);
  return { graphql: errors[0]!, rest: translateCoercionError(errors[0]!) };
}

const valid = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  walletId: 'wlt_abcdefghijklmnopqrst',
  amount: 12.5,
  description: 'Order #1001',
  merchantName: 'Acme Coffee',
  ...overrides,
});

test('a fitting body produces no coercion error (so each case below fails for its one fault)', async () => {
  expect(await coercionErrors(SCHEMA, REQUEST_PAYMENT.operation, REQUEST_PAYMENT.variables({}, valid(), null))).toEqual([]);
});

describe('request-payment bodies, worded for a REST client', () => {
  const cases: Array<[string, unknown, string]> = [
    ['an unknown key', valid({ 'callback-url': 'https://x' }), 'Unknown field "callback-url"'],
    ['an unknown key close to a real one (graphql-js adds "Did you mean")', valid({ amout: 1 }), 'Unknown field "amout"'],
    ['an unknown key with quotes and a newline', valid({ 'we"ird\nkey': 1 }), 'Unknown field "we\\"ird\\nkey"'],
    ['an unknown key longer than 64 characters is clipped', valid({ ['k'.repeat(80)]: 1 }), `Unknown field "${'k'.repeat(64)}…"`],
    ['a missing required field', (({ walletId: _w, ...rest }) => rest)(valid()), 'walletId is required'],
    ['null for a required field', valid({ merchantName: null }), 'merchantName must not be null'],
    ['a string for a Float', valid({ amount: '12.50' }), 'amount must be a number'],
    ['a boolean for a Float', valid({ amount: true }), 'amount must be a number'],
    ['NaN for a Float', valid({ amount: Number.NaN }), 'amount must be a finite number'],
    ['Infinity for a Float', valid({ amount: Number.POSITIVE_INFINITY }), 'amount must be a finite number'],
    ['-Infinity for a Float', valid({ amount: Number.NEGATIVE_INFINITY }), 'amount must be a finite number'],
    ['a number for a String', valid({ walletId: 5 }), 'walletId must be a string'],
    ['an object for a String', valid({ description: { text: 'x' } }), 'description must be a string'],
    ['a number instead of an object', 5, 'Request body must be a JSON object'],
    ['a string instead of an object', 'walletId=1', 'Request body must be a JSON object'],
    ['an array instead of an object', [valid()], 'Request body must be a JSON object'],
    ['null instead of an object', null, 'Request body must be a JSON object'],
  ];
  test.each(cases)('%s', async (_name, body, expected) => {
    const { graphql: original, rest } = await restMessage(body);
    expect({ original, rest }).toEqual({ original, rest: expected });
  });
});

describe('the other scalar kinds', () => {
  const operation = 'query Probe($input: Probe!) { probe(input: $input) }';
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['a fraction for an Int', { count: 1.5 }, 'count must be an integer'],
    ['a string for an Int', { count: '3' }, 'count must be an integer'],
    ['an Int beyond 32 bits', { count: 2 ** 40 }, 'count must be an integer'],
    ['a string for a Boolean', { flag: 'yes' }, 'flag must be a boolean'],
    ['an object for an ID', { ref: { id: 1 } }, 'ref must be a string'],
    ['an unknown enum value (no wording of its own)', { colour: 'BLUE' }, 'Invalid request'],
  ];
  test.each(cases)('%s', async (_name, input, expected) => {
    const errors = await coercionErrors(PROBE, operation, { input });
    expect(errors).toHaveLength(1);
    expect({ original: errors[0], rest: translateCoercionError(errors[0]!) }).toEqual({ original: errors[0], rest: expected });
  });
});

describe('query parameters (variables of their own), worded for a REST client', () => {
  const route = (path: string) => REST_ROUTES.find((r) => r.method === 'GET' && r.path === path)!;
  const cases: Array<[string, string, Record<string, string>, string]> = [
    ['a word for limit', '/wallet/payment-requests', { limit: 'x' }, 'limit must be an integer'],
    ['a fraction for limit', '/events', { limit: '1.5' }, 'limit must be an integer'],
    ['a limit beyond 32 bits', '/wallet/payment-requests', { limit: '99999999999' }, 'limit must be an integer'],
  ];
  test.each(cases)('%s', async (_name, path, query, expected) => {
    const r = route(path);
    const errors = await coercionErrors(SCHEMA, r.operation, r.variables({}, undefined, null, query));
    expect(errors).toHaveLength(1);
    expect({ original: errors[0], rest: translateCoercionError(errors[0]!) }).toEqual({ original: errors[0], rest: expected });
  });
});

test('errors that are not about a variable are left alone', async () => {
  const result = await graphql({ schema: SCHEMA, source: '{ noSuchField }' });
  expect(result.errors).toHaveLength(1);
  expect(translateCoercionError(result.errors![0]!.message)).toBeUndefined();
});
