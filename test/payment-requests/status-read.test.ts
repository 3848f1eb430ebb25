// The status read is hand-written SQL mapped to a detached entity (a fast path, docs/ARCHITECTURE.md):
// its column list must be exactly the entity's columns, or a new field would silently read as undefined.
import { MikroORM } from '@mikro-orm/postgresql';
import ormConfig from '../../mikro-orm.config.js';
import { PaymentRequest, overdueSql } from '../../src/payment-requests/payment-request.entity.js';
import { STATUS_READ } from '../../src/payment-requests/payment-request.service.js';

test('STATUS_READ selects every column of the PaymentRequest entity, and its formula, and nothing else', async () => {
  // Metadata only: no connection is opened.
  const orm = await MikroORM.init({ ...ormConfig, clientUrl: 'postgresql://metadata-only@127.0.0.1:1/none', connect: false });
  try {
    const meta = orm.getMetadata().get(PaymentRequest.name);
    const columns = meta.props.filter((p) => !p.formula).flatMap((p) => p.fieldNames);
    const formulas = meta.props.filter((p) => p.formula).map((p) => p.name);
    expect(columns.length).toBeGreaterThan(10);
    // The formula's own SQL (it reads columns too) is the entity's, selected under the formula's name.
    const formula = `${overdueSql('pr')} as `;
    expect(STATUS_READ.text).toContain(formula);
    const list = STATUS_READ.text.slice(0, STATUS_READ.text.indexOf(' from ')).replace(formula, 'formula:');
    const selected = [...list.matchAll(/\bpr\.(\w+)/g)].map((m) => m[1]!);
    const aliases = [...list.matchAll(/formula:(\w+)/g)].map((m) => m[1]!);
    expect(new Set(selected)).toEqual(new Set(columns));
    expect(selected.length).toBe(new Set(selected).size);
    expect(aliases).toEqual(formulas);
  } finally {
    await orm.close();
  }
});
