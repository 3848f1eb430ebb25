// The SQL twin of the read rule (effectiveStatusSql / overdueSql, used by filters, transitions
// and the sweeper) agrees with effectiveStatus for every status on both sides of expiresAt, by
// the database's clock.
import { effectiveStatus } from '../../src/payment-requests/payment-request.rules.js';
import { effectiveStatusSql, overdueSql, PaymentRequestStatus } from '../../src/payment-requests/payment-request.entity.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase(1);
});
afterAll(async () => {
  await database?.close();
});

test('for every status, an hour before and after expiresAt', async () => {
  const statuses = Object.values(PaymentRequestStatus);
  const rows = await database.db.orm.em.fork().execute<Array<{ status: PaymentRequestStatus; past: boolean; overdue: boolean; effective: string }>>(
    `select pr.status::text as status, pr.past, ${overdueSql('pr')} as overdue, ${effectiveStatusSql('pr')} as effective
       from (select s as status, p as past, now() + case when p then interval '-1 hour' else interval '1 hour' end as expires_at
               from unnest(string_to_array(?, ',')) as s cross join (values (true), (false)) as v(p)) as pr`,
    [statuses.join(',')],
  );
  expect(rows).toHaveLength(statuses.length * 2);
  for (const row of rows) {
    expect({ ...row, overdue: row.overdue }).toEqual({ ...row, overdue: row.status === PaymentRequestStatus.PENDING && row.past });
    expect({ ...row, effective: row.effective }).toEqual({ ...row, effective: effectiveStatus({ status: row.status, overdue: row.overdue }) });
  }
  expect(rows.filter((r) => r.effective === 'EXPIRED').map((r) => `${r.status}/${r.past ? 'past' : 'future'}`).sort()).toEqual([
    'EXPIRED/future',
    'EXPIRED/past',
    'PENDING/past',
  ]);
});
