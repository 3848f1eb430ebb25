import { readFile } from 'node:fs/promises';
import { printSchema } from 'graphql';
import { getSchema } from '../src/schema.js';

test('schema/schema.graphql is the SDL the code generates (run `npm run schema:emit` after changing the schema)', async () => {
  const committed = await readFile(new URL('../schema/schema.graphql', import.meta.url), 'utf8');
  expect(committed).toBe(`${printSchema(await getSchema())}\n`);
});
