/** describeError (src/errors.ts), the one translation of any error: the database's error codes. */
import { GraphQLError } from 'graphql';
import { AppError, describeError } from '../src/errors.js';

const pgError = (code: string) => Object.assign(new Error(`postgres said ${code}`), { code });

test.each(['55P03', '57014', '40P01', '40001'])('PostgreSQL %s (lock or statement timeout, deadlock, serialization): 503, try again in 1 s', (code) => {
  const reply = describeError(pgError(code));
  expect(reply).toMatchObject({ statusCode: 503, code: 'SERVICE_UNAVAILABLE', headers: { 'Retry-After': '1' }, kind: 'unavailable' });
  expect(reply.message).toMatch(/try again/);
  // The same inside a GraphQL error, as a resolver's throw arrives.
  expect(describeError(new GraphQLError('wrapped', { originalError: pgError(code) })).statusCode).toBe(503);
});

test.each(['22021', '22P02', '22007', '22008', '22003'])('PostgreSQL data exception %s: 400, nothing about SQL', (code) => {
  expect(describeError(pgError(code))).toMatchObject({ statusCode: 400, message: 'Invalid value in the request', code: 'BAD_USER_INPUT', kind: 'expected' });
});

test('an unreachable database is 503; an unknown error is 500 with a plain message; an AppError keeps its code', () => {
  expect(describeError(pgError('ECONNREFUSED'))).toMatchObject({ statusCode: 503, kind: 'unavailable' });
  expect(describeError(new Error('Client has encountered a connection error and is not queryable'))).toMatchObject({ statusCode: 503 });
  expect(describeError(pgError('23505'))).toMatchObject({ statusCode: 500, message: 'Internal server error', kind: 'unexpected' });
  expect(describeError(new AppError('INSUFFICIENT_FUNDS', 'Insufficient funds'))).toMatchObject({ statusCode: 402, code: 'INSUFFICIENT_FUNDS', kind: 'expected' });
});
