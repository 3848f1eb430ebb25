import { Developer } from '../developers/developer.entity.js';
import { SecretKey } from '../auth/secret-key.entity.js';
import { User } from '../accounts/user.entity.js';
import { Wallet } from '../accounts/wallet.entity.js';
import { PaymentRequest } from '../payment-requests/payment-request.entity.js';
import { Refund, Transaction } from '../transactions/transaction.entity.js';
import { LedgerEntry } from '../ledger/ledger-entry.entity.js';
import { Operator } from '../operators/operator.entity.js';
import { AuditEntry } from '../audit/audit-entry.entity.js';
import { WalletPin } from '../consent/wallet-pin.entity.js';
import { Payout } from '../settlement/payout.entity.js';

/** Every entity the ORM maps. */
export const entities = [Developer, SecretKey, User, Wallet, PaymentRequest, Transaction, Refund, LedgerEntry, Operator, AuditEntry, WalletPin, Payout];
