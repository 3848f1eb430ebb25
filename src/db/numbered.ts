/**
 * A statement written with numbered parameters (`$1`, `$2`, …, each usable any number of times),
 * as EntityManager.execute takes it: `?` in order, with the values repeated to match. Long
 * statements that use one value in several places read (and are checked) by name once.
 */
export function numbered(text: string, values: readonly unknown[]): [string, unknown[]] {
  const ordered: unknown[] = [];
  const sql = text.replace(/\$(\d+)/g, (_m, n: string) => {
    const i = Number(n) - 1;
    if (i < 0 || i >= values.length) throw new Error(`no value for $${n}`);
    ordered.push(values[i]);
    return '?';
  });
  return [sql, ordered];
}
