// The payout report's CSV (src/settlement/report.ts): RFC 4180 fields and lines.
import { csvField, csvLine, REPORT_HEADER } from '../../src/settlement/report.js';

test('the header line is exactly SPEC §16', () => {
  expect(REPORT_HEADER).toBe('balance_transaction_id,type,created_at,transaction_id,payment_request_id,reference,currency,gross,fee,net,consent_receipt');
});

test('a field is quoted only when it holds a comma, a quote, CR or LF; quotes are doubled', () => {
  expect(csvField('order-1001')).toBe('order-1001');
  expect(csvField('a,b')).toBe('"a,b"');
  expect(csvField('say "hi"')).toBe('"say ""hi"""');
  expect(csvField('two\r\nlines')).toBe('"two\r\nlines"');
  expect(csvField('lf\nonly')).toBe('"lf\nonly"');
  expect(csvField(' spaced ')).toBe(' spaced ');
  expect(csvField('')).toBe('');
  expect(csvField(null)).toBe('');
});

test('a line: eleven fields, amounts as the database wrote them, the time in UTC, CRLF', () => {
  const line = csvLine({
    id: 'b1',
    type: 'payment',
    createdAt: new Date('2026-11-27T09:14:05.218Z'),
    transactionId: 't1',
    paymentRequestId: 'p1',
    reference: 'x,"y"',
    currency: 'ETB',
    amount: '12.50',
    fee: '0.38',
    net: '12.12',
    consentReceipt: 'eyJ.a.b',
  });
  expect(line).toBe('b1,payment,2026-11-27T09:14:05.218Z,t1,p1,"x,""y""",ETB,12.50,0.38,12.12,eyJ.a.b\r\n');
  expect(csvLine({ id: 'b2', type: 'payout_reversal', createdAt: new Date(0), transactionId: null, paymentRequestId: null, reference: null, currency: 'ETB', amount: '5.00', fee: '0.00', net: '5.00', consentReceipt: null })).toBe(
    'b2,payout_reversal,1970-01-01T00:00:00.000Z,,,,ETB,5.00,0.00,5.00,\r\n',
  );
});
