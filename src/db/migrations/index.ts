import { Migration20261122000000_initial } from './Migration20261122000000_initial.js';
import { Migration20261122000100_production } from './Migration20261122000100_production.js';
import { Migration20261122000200_unlogged_rate_limits } from './Migration20261122000200_unlogged_rate_limits.js';
import { Migration20261122000300_events_webhooks } from './Migration20261122000300_events_webhooks.js';
import { Migration20261122001000_operators } from './Migration20261122001000_operators.js';
import { Migration20261122001100_audit_log } from './Migration20261122001100_audit_log.js';
import { Migration20261122001200_partial_refunds } from './Migration20261122001200_partial_refunds.js';
import { Migration20261123002000_webhook_endpoint_activity } from './Migration20261123002000_webhook_endpoint_activity.js';
import { Migration20261124000000_outbox_retention } from './Migration20261124000000_outbox_retention.js';
import { Migration20261124100000_ledger_checks } from './Migration20261124100000_ledger_checks.js';
import { Migration20261124200000_ws_connections } from './Migration20261124200000_ws_connections.js';
import { Migration20261126001000_wallet_pins } from './Migration20261126001000_wallet_pins.js';
import { Migration20261126003000_consent_receipts_payer_controls } from './Migration20261126003000_consent_receipts_payer_controls.js';
import { Migration20261126100000_passkeys } from './Migration20261126100000_passkeys.js';
import { Migration20261126110000_links_capture } from './Migration20261126110000_links_capture.js';
import { Migration20261126120000_payer_pending } from './Migration20261126120000_payer_pending.js';
import { Migration20261127100000_event_subjects } from './Migration20261127100000_event_subjects.js';
import { Migration20261128100000_settlement } from './Migration20261128100000_settlement.js';
import { Migration20261128100100_payout_events } from './Migration20261128100100_payout_events.js';
import { Migration20261129100000_pin_pepper_locks } from './Migration20261129100000_pin_pepper_locks.js';

/** Migrations in order; listed explicitly so compiled and test runs find the same set. */
export const migrationsList = [
  { name: 'Migration20261122000000_initial', class: Migration20261122000000_initial },
  { name: 'Migration20261122000100_production', class: Migration20261122000100_production },
  { name: 'Migration20261122000200_unlogged_rate_limits', class: Migration20261122000200_unlogged_rate_limits },
  { name: 'Migration20261122000300_events_webhooks', class: Migration20261122000300_events_webhooks },
  { name: 'Migration20261122001000_operators', class: Migration20261122001000_operators },
  { name: 'Migration20261122001100_audit_log', class: Migration20261122001100_audit_log },
  { name: 'Migration20261122001200_partial_refunds', class: Migration20261122001200_partial_refunds },
  { name: 'Migration20261123002000_webhook_endpoint_activity', class: Migration20261123002000_webhook_endpoint_activity },
  { name: 'Migration20261124000000_outbox_retention', class: Migration20261124000000_outbox_retention },
  { name: 'Migration20261124100000_ledger_checks', class: Migration20261124100000_ledger_checks },
  { name: 'Migration20261124200000_ws_connections', class: Migration20261124200000_ws_connections },
  { name: 'Migration20261126001000_wallet_pins', class: Migration20261126001000_wallet_pins },
  { name: 'Migration20261126003000_consent_receipts_payer_controls', class: Migration20261126003000_consent_receipts_payer_controls },
  { name: 'Migration20261126100000_passkeys', class: Migration20261126100000_passkeys },
  { name: 'Migration20261126110000_links_capture', class: Migration20261126110000_links_capture },
  { name: 'Migration20261126120000_payer_pending', class: Migration20261126120000_payer_pending },
  { name: 'Migration20261127100000_event_subjects', class: Migration20261127100000_event_subjects },
  { name: 'Migration20261128100000_settlement', class: Migration20261128100000_settlement },
  { name: 'Migration20261128100100_payout_events', class: Migration20261128100100_payout_events },
  { name: 'Migration20261129100000_pin_pepper_locks', class: Migration20261129100000_pin_pepper_locks },
];
