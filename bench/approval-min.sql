-- The MINIMAL durable transaction an approval needs (bench/approval.mjs runs it with pgbench -M
-- prepared beside the gateway's approvePaymentRequest): the request locked by its conditional
-- update (with the consent receipt), the wallet debited only if it covers the amount, the
-- transaction, the developer's balance, both ledger entries and the event, ONE commit.
-- Each transaction takes the next PENDING request of bench_queue (made by the bench).
-- :payload and :receipt come from -D (the gateway's event payload and a receipt of the same size).
BEGIN;
update payment_requests set status = 'APPROVED', transaction_id = gen_random_uuid(), updated_at = now(), consent_receipt = :receipt
 where id = (select id from bench_queue where n = (select nextval('bench_queue_n'))) and status = 'PENDING' and expires_at > now()
 returning id as pr, wallet_id as w, developer_id as d, transaction_id as t, amount as a \gset
update wallets set balance = balance - :a, updated_at = now() where id = :w and status = 'ACTIVE' and balance - held >= :a;
insert into transactions (id, payment_request_id, wallet_id, developer_id, amount, captured_amount, currency, status, type, description, payment_provider, payment_reference, created_at, updated_at)
  values (:t, :pr, :w, :d, :a, :a, 'ETB', 'COMPLETED', 'WALLET_PAYMENT', 'Order', 'WALLET', 'WPAY' || lpad(nextval('payment_reference_seq')::text, 12, '0') || '-BENCH1', now(), now());
insert into developer_balances (developer_id, currency, balance) values (:d, 'ETB', :a)
  on conflict (developer_id, currency) do update set balance = developer_balances.balance + excluded.balance;
insert into ledger_entries (kind, transaction_id, wallet_id, developer_id, amount, currency)
  values ('PAYMENT', :t, :w, null, -1 * :a::numeric, 'ETB'), ('PAYMENT', :t, null, :d, :a, 'ETB');
insert into events (id, type, subject_id, developer_id, payment_request_id, transaction_id, sequence, payload, created_at)
  values ('evt_' || md5(random()::text), 'payment_request.approved', :pr, :d, :pr, :t, 1, :payload::jsonb, now());
COMMIT;
