// The read rule of a payment request (src/payment-requests/payment-request.rules.ts): PENDING and
// past `expiresAt` by the database's clock (`overdue`, read with the row) reads as EXPIRED before
// the sweeper wrote it, changed at `expiresAt`.
import { effectiveStatus, effectiveUpdatedAt } from '../../src/payment-requests/payment-request.rules.js';
import { PaymentRequestStatus } from '../../src/payment-requests/payment-request.entity.js';

const expiresAt = new Date('2026-01-01T12:00:00.000Z');
const updatedAt = new Date('2026-01-01T11:55:00.000Z');
const request = (status: PaymentRequestStatus, overdue: boolean | undefined) => ({ status, overdue, expiresAt, updatedAt });

test.each([false, undefined])('PENDING and not overdue (%p) reads as PENDING, updated when it was written', (overdue) => {
  expect(effectiveStatus(request(PaymentRequestStatus.PENDING, overdue))).toBe(PaymentRequestStatus.PENDING);
  expect(effectiveUpdatedAt(request(PaymentRequestStatus.PENDING, overdue))).toBe(updatedAt);
});

test('PENDING and overdue reads as EXPIRED, updated at expiresAt', () => {
  expect(effectiveStatus(request(PaymentRequestStatus.PENDING, true))).toBe(PaymentRequestStatus.EXPIRED);
  expect(effectiveUpdatedAt(request(PaymentRequestStatus.PENDING, true))).toBe(expiresAt);
});

const decided = Object.values(PaymentRequestStatus).filter((s) => s !== PaymentRequestStatus.PENDING);
test.each(decided)('%s reads as itself whatever `overdue` says, updated when it was written', (status) => {
  for (const overdue of [true, false, undefined]) {
    expect(effectiveStatus(request(status, overdue))).toBe(status);
    expect(effectiveUpdatedAt(request(status, overdue))).toBe(updatedAt);
  }
});

test('every status but PENDING is covered above', () => {
  expect([...decided].sort()).toEqual(['APPROVED', 'CANCELLED', 'EXPIRED', 'REJECTED']);
});
