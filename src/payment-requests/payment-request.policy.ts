import { AppError, badInput } from '../errors.js';

/*
 * Who may act on a payment request: the one policy, as SQL fragments over the request `pr` and
 * the caller's wallet `w`, used by every path that decides it: the approval's check before the
 * verification (nothing is counted for a request the caller may not pay), the approval's claim
 * (the conditional update that decides for good), the explanation of a refused transition, the
 * passkey approval challenge, the link read (`paymentRequestByCode`) and the create (a developer
 * the wallet's holder blocked).
 */

/** The request is to the wallet `w`, or (approving only) an open link not yet bound, in `w`'s currency. */
export function mayApproveSql(pr = 'pr', w = 'w'): string {
  return `(${pr}.wallet_id = ${w}.id or (${pr}.wallet_id is null and ${pr}.open_link and ${w}.currency = ${pr}.currency))`;
}

/** The holder of wallet `walletId` (an SQL expression) blocked developer `developerId` (SQL): their requests cannot be approved or made. */
export function blockedSql(walletId: string, developerId: string): string {
  return `exists (select 1 from merchant_blocks b where b.wallet_id = ${walletId} and b.developer_id = ${developerId})`;
}

/** The payer's answer when they blocked the request's developer (their own block: nothing changes until they unblock). */
export function payerBlockedError(): AppError {
  return new AppError('MERCHANT_BLOCKED', 'You blocked this merchant; unblock it to pay this request');
}

/** An open request in another currency than the caller's wallet: BAD_USER_INPUT, before anything is counted. */
export function currencyMismatchError(requestCurrency: string, walletCurrency: string): AppError {
  return badInput(`This payment request is in ${requestCurrency}; your wallet holds ${walletCurrency}`);
}
