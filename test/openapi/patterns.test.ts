import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openApi } from '../helpers/openapi.js';
import { parseMerchantFields, requireText } from '../../src/payment-requests/merchant-fields.js';

// The document's `pattern`s are read by tools outside JavaScript too (schemathesis, generated
// clients in other languages). Each must mean the same there as in ECMAScript with the `u` flag
// (how ajv, and JSON Schema 2020-12, read them): checked here against Python's JSON Schema
// validator over strings chosen where regex dialects differ (\s, \d, \p{..}, astral and
// invisible characters). One difference is left on purpose: Python's `$` also matches before a
// final newline (jsonschema uses re.search), and the only portable end anchor is a lookahead that
// the generators schemathesis and fast-check build inputs from cannot read; those values are
// refused by the gateway anyway, so the document is never looser than the server there.

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** Every `pattern` string in the document, with where it stands. */
function patterns(node: unknown, at = '#', out = new Map<string, string>()): Map<string, string> {
  if (Array.isArray(node)) node.forEach((v, i) => patterns(v, `${at}/${i}`, out));
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === 'pattern' && typeof v === 'string') out.set(v, `${at}/pattern`);
      else patterns(v, `${at}/${k}`, out);
    }
  }
  return out;
}

const SAMPLES: string[] = [
  '', 'a', 'abc', ' abc ', '\tabc\t', 'abc\n', '\nabc', 'a b', 'x'.repeat(64), 'x'.repeat(65), 'x'.repeat(256),
  '0912345678', '0912345678\n', '912345678', '08x', '9', 'abebe.k', 'Abebe_K', '3.1.0', '3.1.0\n', '3.1.\u0663',
  'evt_abc123', 'evt_abc123\n', 'evt_test_abc', 'WPAY000000001234-X7K2QD', 'WPAY000000001234-X7K2QD\n', 'ETB', 'ETB\n',
  'https://example.com/hook', 'https://example.com/hook\n', 'http://user@example.com', 'whsec_abc+/=', 'whsec_abc=\n',
  'order-1001', 'order-1001\n', 'idem-key-1', ' idem', 'idem ',
  '\u001c', '\u001cabc', 'abc\u001c', '\u0085', 'abc\u0085', '\u0085abc', '\u00a0abc\u00a0', '\ufeffabc', 'abc\ufeff',
  '\u00ad', 'a\u00adb', 'a\u200bb', '\u200e', 'a\u2028b', '\u2028abc', 'a\u0600', '\ue000', 'a\uf8ffb', 'a\u0000b', 'a\u007fb', 'a\u009fb',
  'Shop \u202Egnp.exe', 'a\u2066b\u2069', 'a\u200fb', 'a\u061cb', 'a\u2060b', ' a\u200b ', 'a\tb\nc\rd', 'a\u000bb', 'a\u2028b\u2029c', '\u3000abc\u3000',
  'é', 'Ñandú', '日本語', '😀', 'a😀b', '😀'.repeat(40), '😀'.repeat(64), '\u{e0001}', '\u{f0000}', '\u{10ffff}',
];

test('every pattern of the OpenAPI document means the same to Python\'s JSON Schema validator as to ECMAScript (u flag)', () => {
  const found = patterns(openApi);
  expect(found.size).toBeGreaterThan(10);
  const list = [...found.keys()];
  const run = spawnSync('python3', [path.join(HERE, 'patterns.py')], { input: JSON.stringify({ patterns: list, samples: SAMPLES }), encoding: 'utf8' });
  if (run.error || run.status !== 0) throw new Error(`python3 test/openapi/patterns.py failed: ${run.error?.message ?? run.stderr}`);
  const python = JSON.parse(run.stdout) as { engine: string; results: Record<string, { error?: string; verdicts?: boolean[] }> };
  process.stderr.write(`[openapi patterns] ${list.length} patterns x ${SAMPLES.length} strings checked with Python's ${python.engine}\n`);
  const differences: string[] = [];
  for (const pattern of list) {
    const result = python.results[pattern]!;
    if (result.error) {
      differences.push(`${found.get(pattern)}: Python cannot compile ${pattern}: ${result.error}`);
      continue;
    }
    const js = new RegExp(pattern, 'u');
    SAMPLES.forEach((sample, i) => {
      if (sample.endsWith('\n')) return; // Python's `$` (see above)
      if (js.test(sample) !== result.verdicts![i]) {
        differences.push(`${found.get(pattern)}: ${JSON.stringify(sample)} is ${js.test(sample) ? 'valid' : 'invalid'} in ECMAScript, ${result.verdicts![i] ? 'valid' : 'invalid'} in Python`);
      }
    });
  }
  expect(differences).toEqual([]);
});

test('the document\'s reference and metadata-key patterns are exactly the rule the gateway applies', () => {
  const reference = new RegExp(openApi.components.schemas.Reference.pattern, 'u');
  const key = new RegExp(openApi.components.schemas.Metadata.propertyNames.pattern, 'u');
  const accepted = (field: 'reference' | 'key', s: string): boolean => {
    try {
      parseMerchantFields(field === 'reference' ? { reference: s } : { metadata: { [s]: 'v' } });
      return true;
    } catch {
      return false;
    }
  };
  for (const s of SAMPLES) {
    const chars = [...s].length;
    expect([s, accepted('reference', s)]).toEqual([s, reference.test(s) && chars >= 1 && chars <= 64]);
    expect([s, accepted('key', s)]).toEqual([s, key.test(s) && chars >= 1 && chars <= 40]);
  }
});

test("the document's walletId, description and merchantName patterns are exactly the rule the gateway applies (nothing hidden in what the payer reads)", () => {
  const fields = openApi.components.schemas.PaymentRequest.properties;
  for (const [field, max] of [['walletId', 64], ['description', 255], ['merchantName', 100]] as const) {
    const pattern = new RegExp(fields[field].pattern, 'u');
    for (const s of SAMPLES) {
      let accepted = true;
      try {
        requireText(s, field, max);
      } catch {
        accepted = false;
      }
      expect([field, s, accepted]).toEqual([field, s, pattern.test(s) && [...s].length >= 1 && [...s.trim()].length <= max]);
    }
  }
});
