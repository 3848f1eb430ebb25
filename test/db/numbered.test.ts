// Numbered parameters for EntityManager.execute (src/db/numbered.ts).
import { numbered } from '../../src/db/numbered.js';

test('each $n becomes a ?, its value repeated in order', () => {
  expect(numbered('select $2::int, $1, $2 + $10', [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])).toEqual(['select ?::int, ?, ? + ?', [2, 1, 2, 10]]);
  expect(numbered('select 1', [])).toEqual(['select 1', []]);
});

test('a number without a value is a mistake in the statement', () => {
  expect(() => numbered('select $3', [1, 2])).toThrow('no value for $3');
  expect(() => numbered('select $0', [1])).toThrow('no value for $0');
});
