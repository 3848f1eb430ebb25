// The random part of a payment reference (SPEC: `WPAY`, 12 digits of a sequence, `-`, 6 of A-Z 0-9).
import { referenceSuffix } from '../../src/transactions/transaction.service.js';

test('a suffix is 6 characters of A-Z 0-9 and completes a reference of the documented shape', () => {
  for (let i = 0; i < 500; i++) {
    const suffix = referenceSuffix();
    expect(suffix).toMatch(/^[A-Z0-9]{6}$/);
    expect(`WPAY${'1234'.padStart(12, '0')}-${suffix}`).toMatch(/^WPAY\d{12}-[A-Z0-9]{6}$/);
  }
});

test('every one of the 36 characters is drawn, in every position', () => {
  // 3000 draws: a character missing from one position by chance has probability ~36·(35/36)^3000 ≈ 1e-35.
  const seen = Array.from({ length: 6 }, () => new Set<string>());
  for (let i = 0; i < 3000; i++) [...referenceSuffix()].forEach((c, pos) => seen[pos]!.add(c));
  for (const chars of seen) expect([...chars].sort().join('')).toBe('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ');
});
