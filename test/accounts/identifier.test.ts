// The identifier rules (src/accounts/identifier.ts): how phones and usernames are stored and looked up.
import { normalisePhone, normaliseUsername, parseIdentifier } from '../../src/accounts/identifier.js';
import { refusalOf } from '../helpers/expect.js';

const refused = (message: string) => ({ code: 'BAD_USER_INPUT', statusCode: 400, message });

describe('normalisePhone: the national number without one leading 0', () => {
  test.each([
    ['0912345678', '912345678'],
    ['912345678', '912345678'],
    ['  0812345678 ', '812345678'],
    ['9'.repeat(15), '9'.repeat(15)],
    ['0' + '9'.repeat(15), '9'.repeat(15)],
    ['912345', '912345'],
  ])('%p is stored as %p', (raw, stored) => {
    expect(normalisePhone(raw)).toBe(stored);
  });

  test.each([
    ['09-1234-5678', 'phone must contain digits only'],
    ['+251912345678', 'phone must contain digits only'],
    ['', 'phone must contain digits only'],
    ['91234', 'phone must have 6 to 15 digits after the leading 0'],
    ['9'.repeat(16), 'phone must have 6 to 15 digits after the leading 0'],
    ['00912345678', 'phone must have 6 to 15 digits after the leading 0'],
    ['0712345678', 'phone must start with 8 or 9 (after an optional leading 0)'],
    ['712345678', 'phone must start with 8 or 9 (after an optional leading 0)'],
  ])('%p is refused: %s', (raw, message) => {
    expect(refusalOf(() => normalisePhone(raw))).toEqual(refused(message));
  });
});

describe('normaliseUsername: 3-32 of a-z 0-9 _ ., lower-cased, not shaped like a phone', () => {
  test.each([
    ['Alice', 'alice'],
    ['  bob_1.x ', 'bob_1.x'],
    ['abc', 'abc'],
    ['a'.repeat(32), 'a'.repeat(32)],
    ['_9lives', '_9lives'],
  ])('%p is stored as %p', (raw, stored) => {
    expect(normaliseUsername(raw)).toBe(stored);
  });

  const shape = 'username must be 3-32 characters of a-z, 0-9, "_" and "."';
  const phoneLike = 'username must not start with 8, 9, 08 or 09 (those are read as phone numbers)';
  test.each([
    ['ab', shape],
    ['a'.repeat(33), shape],
    ['al ice', shape],
    ['alice-b', shape],
    ['élodie', shape],
    ['9lives', phoneLike],
    ['8ball', phoneLike],
    ['09er', phoneLike],
    ['08_x', phoneLike],
  ])('%p is refused: %s', (raw, message) => {
    expect(refusalOf(() => normaliseUsername(raw))).toEqual(refused(message));
  });

  test('a username that passes never reads back as a phone number', () => {
    for (const name of ['alice', '_9lives', 'x0912345678', '0alice', '07abc']) {
      expect(parseIdentifier(normaliseUsername(name))).toEqual({ kind: 'username', username: name });
    }
  });
});

describe('parseIdentifier: the look-up rule of GET /account/{identifier}', () => {
  test.each([
    ['0912345678', { kind: 'phone', phone: '912345678' }],
    ['912345678', { kind: 'phone', phone: '912345678' }],
    ['0812345678', { kind: 'phone', phone: '812345678' }],
    ['812345678', { kind: 'phone', phone: '812345678' }],
    [' 0912345678 ', { kind: 'phone', phone: '912345678' }],
    ['ALICE', { kind: 'username', username: 'alice' }],
    ['0712345678', { kind: 'username', username: '0712345678' }],
    ['x'.repeat(64), { kind: 'username', username: 'x'.repeat(64) }],
  ])('%p is %p', (raw, expected) => {
    expect(parseIdentifier(raw)).toEqual(expected);
  });

  test('a phone as stored is found by either form it was given in', () => {
    const stored = normalisePhone('0912345678');
    expect(parseIdentifier('0912345678')).toEqual({ kind: 'phone', phone: stored });
    expect(parseIdentifier('912345678')).toEqual({ kind: 'phone', phone: stored });
  });

  test.each([
    ['', 'identifier must not be empty'],
    ['   \t', 'identifier must not be empty'],
    ['x'.repeat(65), 'identifier must be at most 64 characters'],
    ['ali\u0000ce', 'identifier must not contain control characters'],
    ['ali\tce', 'identifier must not contain control characters'],
    ['ali\u007fce', 'identifier must not contain control characters'],
    ['0912-345678', 'a phone number must contain digits only'],
    ['9lives', 'a phone number must contain digits only'],
  ])('%p is refused: %s', (raw, message) => {
    expect(refusalOf(() => parseIdentifier(raw))).toEqual(refused(message));
  });
});
