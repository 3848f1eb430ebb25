/*
 * The payout reconciliation report (SPEC §16): CSV as RFC 4180 writes it (CRLF line ends; a field
 * with a comma, a double quote, CR or LF is quoted, its quotes doubled), one line per balance
 * transaction the payout holds, with the consent receipt of the payment it concerns.
 */

/** The header line, exactly as SPEC §16 gives it. */
export const REPORT_HEADER =
  'balance_transaction_id,type,created_at,transaction_id,payment_request_id,reference,currency,gross,fee,net,consent_receipt';

/** One field: as it is, or quoted when RFC 4180 requires it. Null and undefined are empty. */
export function csvField(value: string | null | undefined): string {
  if (value === null || value === undefined) return '';
  return /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/** An item of a payout as the report reads it (money as NUMERIC text: "12.50", "-3.00"). */
export interface ReportItem {
  id: string;
  type: string;
  createdAt: Date;
  transactionId: string | null;
  paymentRequestId: string | null;
  reference: string | null;
  currency: string;
  amount: string;
  fee: string;
  net: string;
  consentReceipt: string | null;
}

/** The report line of one item, CRLF included (`gross` is the entry's amount; times in UTC, as the JSON bodies show them). */
export function csvLine(item: ReportItem): string {
  return `${[
    item.id,
    item.type,
    new Date(item.createdAt).toISOString(),
    item.transactionId,
    item.paymentRequestId,
    item.reference,
    item.currency,
    item.amount,
    item.fee,
    item.net,
    item.consentReceipt,
  ]
    .map(csvField)
    .join(',')}\r\n`;
}
