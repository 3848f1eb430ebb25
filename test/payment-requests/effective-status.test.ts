// The read rule of a payment request: PENDING past `expiresAt` reads as EXPIRED before the sweeper wrote it.
import { effectiveStatus, effectiveUpdatedAt } from '../../src/payment-requests/payment-request.service.js';
import { PaymentRequestStatus } from '../../src/payment-requests/payment-request.entity.js';

const expiresAt = new Date('2026-01-01T12:00:00.000Z');
const updatedAt = new Date('2026-01-01T11:55:00.000Z');
const at = (offsetMs: number) => new Date(expiresAt.getTime() + offsetMs);
const request = (status: PaymentRequestStatus) => ({ status, expiresAt, updatedAt });

test('PENDING before expiresAt reads as PENDING, updated when it was written', () => {
  expect(effectiveStatus(request(PaymentRequestStatus.PENDING), at(-1))).toBe(PaymentRequestStatus.PENDING);
  expect(effectiveUpdatedAt(request(PaymentRequestStatus.PENDING), at(-1))).toEqual(updatedAt);
});

test.each([0, 1, 86_400_000])('PENDING %p ms after expiresAt reads as EXPIRED, updated at expiresAt', (offset) => {
  expect(effectiveStatus(request(PaymentRequestStatus.PENDING), at(offset))).toBe(PaymentRequestStatus.EXPIRED);
  expect(effectiveUpdatedAt(request(PaymentRequestStatus.PENDING), at(offset))).toEqual(expiresAt);
});

const decided = Object.values(PaymentRequestStatus).filter((s) => s !== PaymentRequestStatus.PENDING);
test.each(decided)('%s reads as itself before and after expiresAt, updated when it was written', (status) => {
  for (const offset of [-1, 0, 1, 86_400_000]) {
    expect(effectiveStatus(request(status), at(offset))).toBe(status);
    expect(effectiveUpdatedAt(request(status), at(offset))).toEqual(updatedAt);
  }
});

test('every status but PENDING is covered above', () => {
  expect([...decided].sort()).toEqual(['APPROVED', 'CANCELLED', 'EXPIRED', 'REJECTED']);
});
