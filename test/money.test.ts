// parseAmount (src/money.ts): the one check of an amount that arrived as a JSON number.
import { differenceOf, parseAmount } from '../src/money.js';
import { refusalOf } from './helpers/expect.js';

const MAX = 1000;
const refused = (message: string) => ({ code: 'BAD_USER_INPUT', statusCode: 400, message });

test.each([
  [12.5, '12.50'],
  [0.01, '0.01'],
  [1, '1.00'],
  [99.99, '99.99'],
  [MAX, '1000.00'],
])('%p is accepted as the exact decimal %p', (value, decimal) => {
  expect(parseAmount(value, MAX)).toBe(decimal);
});

test.each([
  [Number.NaN, 'amount must be a finite number'],
  [Number.POSITIVE_INFINITY, 'amount must be a finite number'],
  [Number.NEGATIVE_INFINITY, 'amount must be a finite number'],
  ['12.50' as unknown as number, 'amount must be a finite number'],
  [null as unknown as number, 'amount must be a finite number'],
  [0, 'amount must be at least 0.01'],
  [0.009, 'amount must be at least 0.01'],
  [-5, 'amount must be at least 0.01'],
  [MAX + 0.01, `amount must be at most ${MAX}`],
  [1.005, 'amount must have at most 2 decimal places'],
  [12.345, 'amount must have at most 2 decimal places'],
  [0.1 + 0.2, 'amount must have at most 2 decimal places'], // 0.30000000000000004 is not 0.30
])('%p is refused: %s', (value, message) => {
  expect(refusalOf(() => parseAmount(value, MAX))).toEqual(refused(message));
});

test('the message names the field it was given', () => {
  expect(refusalOf(() => parseAmount(-1, MAX, 'balance'))).toEqual(refused('balance must be at least 0.01'));
});

// differenceOf: a wallet's available balance (balance - held) from two NUMERIC(18,2) strings, exactly.
test.each([
  ['100.00', '30.00', 70],
  ['0.30', '0.10', 0.2], // 0.3 - 0.1 in floating point is 0.19999999999999998
  ['1000000000000.01', '0.02', 999999999999.99],
  ['5.00', '5.00', 0],
  ['1.00', '2.50', -1.5],
])('differenceOf(%p, %p) is exactly %p', (a, b, expected) => {
  expect(differenceOf(a, b)).toBe(expected);
});
