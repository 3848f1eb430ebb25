import fc from 'fast-check';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import { openApi, openApiAjv, resolvePointer } from './openapi.js';

/**
 * fast-check arbitraries derived from schema/openapi.yaml: for every REST operation, requests
 * whose every input (path and query parameters, headers, JSON body) the document allows, and
 * requests with exactly one input the document forbids (and what it breaks). Used by the
 * contract fuzzer (test/fuzz/openapi.test.ts): what the document allows the server must accept,
 * what it forbids the server must refuse.
 *
 * Only the JSON Schema the document's request side uses is understood (type, enum, const,
 * minLength, maxLength, pattern, format uuid/uri, minimum, maximum, multipleOf, properties,
 * required, additionalProperties, maxProperties, propertyNames, items, minItems, oneOf, $ref);
 * every generated value is checked with ajv against its schema, so a keyword not understood
 * here can make a generator weaker, never wrong.
 */

type Json = any;

/** One request, as the fuzzer sends it. */
export interface ApiRequest {
  method: string;
  /** The path with its parameters substituted (percent-encoded). */
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  /** The JSON body, when the operation takes one. */
  body?: unknown;
}

/** One operation of the document and how to fill in its inputs. */
export interface ApiOperation {
  method: string;
  template: string;
  operationId: string;
  params: Array<{ name: string; in: 'path' | 'query' | 'header'; required: boolean; schema: Json }>;
  body: Json | undefined;
}

/** Values of the gateway's own state a request may name (real ids next to random ones), per parameter or body field name. */
export type Known = Record<string, () => string[]>;

/**
 * Arbitraries that replace the document's own for a body field (by name), e.g. webhook URLs on
 * loopback: a test must not make the gateway deliver to a generated public host.
 */
export type Overrides = Record<string, fc.Arbitrary<unknown>>;

const METHODS = ['get', 'post', 'delete', 'put', 'patch'];

function deref(node: Json): Json {
  let n = node;
  while (n && typeof n.$ref === 'string') n = resolvePointer(n.$ref);
  return n;
}

/** Every authenticated operation under /api/v1 (not the document itself). */
export function apiOperations(): ApiOperation[] {
  const out: ApiOperation[] = [];
  for (const [template, raw] of Object.entries<Json>(openApi.paths)) {
    if (!template.startsWith('/api/v1/') || template === '/api/v1/openapi.json') continue;
    for (const method of METHODS) {
      const op = raw[method];
      if (!op) continue;
      const params = [...(raw.parameters ?? []), ...(op.parameters ?? [])].map(deref).map((p: Json) => ({
        name: p.name as string,
        in: p.in as 'path' | 'query' | 'header',
        required: Boolean(p.required),
        schema: p.schema as Json,
      }));
      const body = op.requestBody ? deref(op.requestBody).content?.['application/json']?.schema : undefined;
      out.push({ method: method.toUpperCase(), template, operationId: op.operationId as string, params, body });
    }
  }
  return out;
}

const validators = new Map<string, ValidateFunction>();
/** ajv's verdict on a value against a schema of the document (component refs resolved in ajv). */
export function conforms(schema: Json, value: unknown): boolean {
  const key = JSON.stringify(schema);
  let fn = validators.get(key);
  if (!fn) {
    const retarget = (n: Json): Json =>
      Array.isArray(n)
        ? n.map(retarget)
        : n && typeof n === 'object'
          ? Object.fromEntries(
              Object.entries(n).map(([k, v]) => [k, k === '$ref' && typeof v === 'string' ? v.replace('#/components/schemas/', 'urn:wallet-gateway:openapi#/$defs/') : retarget(v)]),
            )
          : n;
    fn = openApiAjv().compile(retarget(schema));
    validators.set(key, fn);
  }
  return fn(value) as boolean;
}

/** Lengths where the document's limits lie (tried as values of repeated letters, kept where the schema allows them). */
const BOUNDARY_LENGTHS = [1, 20, 40, 64, 100, 255, 500, 2048];

const wellFormed = (s: string): boolean => (s as unknown as { isWellFormed(): boolean }).isWellFormed();

/** A string arbitrary for a string schema, before the ajv check. */
function stringCandidates(s: Json): fc.Arbitrary<string> {
  if (s.format === 'uuid') return fc.oneof(fc.uuid(), fc.uuid().map((u) => u.toUpperCase()));
  if (s.format === 'date-time' || s.format === 'date') {
    const iso = fc.date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true }).map((d) => d.toISOString());
    return s.format === 'date' ? iso.map((t) => t.slice(0, 10)) : fc.oneof(iso, iso.map((t) => `${t.slice(0, 19)}+03:00`));
  }
  if (s.format === 'uri') return fc.webUrl({ validSchemes: ['http', 'https'], withQueryParameters: true, withFragments: true });
  if (typeof s.pattern === 'string') {
    // Long values come from the repeated letters (boundaries such as 64, 100 or 255 characters):
    // stringMatching at a large size runs out of memory on unbounded quantifiers.
    const re = new RegExp(s.pattern, 'u');
    return fc.oneof({ arbitrary: fc.stringMatching(re), weight: 4 }, { arbitrary: fc.constantFrom(...BOUNDARY_LENGTHS).map((n) => 'x'.repeat(n)), weight: 1 });
  }
  const minLength = s.minLength ?? 0;
  const maxLength = s.maxLength ?? 80;
  return fc.oneof(
    fc.string({ minLength, maxLength, unit: 'binary' }),
    fc.string({ minLength, maxLength: Math.min(maxLength, 40), unit: 'grapheme-ascii' }),
    fc.constant('x'.repeat(maxLength)),
    fc.constant('x'.repeat(Math.max(1, minLength))),
  );
}

/** An arbitrary of values the schema allows. */
export function valid(schema: Json): fc.Arbitrary<unknown> {
  const s = deref(schema);
  const checked = (arb: fc.Arbitrary<unknown>) => arb.filter((v) => (typeof v !== 'string' || wellFormed(v)) && conforms(schema, v));
  if (s.oneOf || s.anyOf) return fc.oneof(...(s.oneOf ?? s.anyOf).map((b: Json) => valid(b)));
  if ('const' in s) return fc.constant(s.const);
  if (Array.isArray(s.enum)) return fc.constantFrom(...s.enum);
  if (Array.isArray(s.type)) return fc.oneof(...s.type.map((t: string) => (t === 'null' ? fc.constant(null) : valid({ ...s, type: t }))));
  switch (s.type) {
    case 'string':
      return checked(stringCandidates(s));
    case 'integer':
      return checked(fc.integer({ min: s.minimum ?? -1e6, max: s.maximum ?? 1e6 }));
    case 'number': {
      const step = s.multipleOf ?? 0.01;
      const min = Math.ceil((s.minimum ?? -1e6) / step);
      const max = Math.floor((s.maximum ?? 1e6) / step);
      // Exact hundredths: k / 100 is the double a client writes as "12.34".
      const scale = Math.round(1 / step);
      return checked(fc.oneof(fc.integer({ min, max }), fc.constantFrom(min, max)).map((k) => k / scale));
    }
    case 'boolean':
      return fc.boolean();
    case 'array':
      return checked(fc.array(valid(s.items ?? {}), { minLength: s.minItems ?? 0, maxLength: s.maxItems ?? 6 }));
    case 'object': {
      const props: Record<string, Json> = s.properties ?? {};
      const record = fc.record(
        Object.fromEntries(Object.entries(props).map(([k, v]) => [k, valid(v)])),
        { requiredKeys: (s.required ?? []) as never[] },
      );
      if (s.additionalProperties && typeof s.additionalProperties === 'object') {
        const names = valid({ type: 'string', ...(s.propertyNames ?? {}) }) as fc.Arbitrary<string>;
        return checked(fc.dictionary(names, valid(s.additionalProperties), { maxKeys: s.maxProperties ?? 5 }));
      }
      return checked(record);
    }
    default:
      return fc.jsonValue();
  }
}

/** Candidate values that break one keyword of the schema (checked with ajv: only real violations remain). */
export function invalid(schema: Json): fc.Arbitrary<{ value: unknown; why: string }> {
  const s = deref(schema);
  const ok = ({ value }: { value: unknown }) => (typeof value !== 'string' || wellFormed(value)) && !conforms(schema, value);
  // One of several: what breaks a branch and fits no other.
  if (s.oneOf || s.anyOf) return fc.oneof(...(s.oneOf ?? s.anyOf).map((b: Json) => invalid(b)) as Array<fc.Arbitrary<{ value: unknown; why: string }>>).filter(ok);
  const out: Array<fc.Arbitrary<{ value: unknown; why: string }>> = [];
  const add = (why: string, arb: fc.Arbitrary<unknown>) => out.push(arb.map((value) => ({ value, why })));
  const types: string[] = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  if (!types.includes('string')) add('type: a string', fc.constantFrom('12', 'x'));
  if (!types.includes('number') && !types.includes('integer')) add('type: a number', fc.constantFrom(12, 0.5));
  if (!types.includes('null')) add('type: null', fc.constant(null));
  if (types.includes('string')) {
    add('type: an object', fc.constant({}));
    const base = valid({ ...s, type: 'string' }) as fc.Arbitrary<string>;
    if ((s.minLength ?? 0) > 0) add('minLength: empty', fc.constant(''));
    for (const n of [s.maxLength, 41, 65, 101, 256, 501, 2049].filter((x) => typeof x === 'number')) add(`length ${n + (n === s.maxLength ? 1 : 0)}`, fc.constant('x'.repeat(n + (n === s.maxLength ? 1 : 0))));
    add('pattern: a control character inside', fc.tuple(base, fc.constantFrom('\u0000', '\u0001', '\u001b', '\u007f', '\u000b')).map(([v, c]) => (typeof v === 'string' && v.length > 1 ? `${v.slice(0, 1)}${c}${v.slice(1)}` : `a${c}b`)));
    add('pattern: another prefix', base.map((v) => `z${v}`));
    add('pattern: only white space', fc.constantFrom(' ', '\t', '  \n '));
    add('pattern: a format character', fc.constant('ab\u200bcd'));
    add('pattern: a non-ASCII character', fc.constant('caf\u00e9'));
    if (Array.isArray(s.enum)) add('enum: another value', fc.constant('not_a_listed_value'));
  }
  if (types.includes('integer') || types.includes('number')) {
    if (typeof s.minimum === 'number') add('minimum', fc.constantFrom(s.minimum - (types.includes('integer') ? 1 : 0.01), s.minimum - 1));
    if (typeof s.maximum === 'number') add('maximum', fc.constantFrom(s.maximum + (types.includes('integer') ? 1 : 0.01), s.maximum * 10));
    if (typeof s.multipleOf === 'number') add('multipleOf', fc.integer({ min: 1, max: 99_999 }).filter((k) => k % 10 !== 0).map((k) => k / 1000));
    if (types.includes('integer')) add('type: a fraction', fc.constant(1.5));
  }
  if (types.includes('object')) {
    add('type: an array', fc.constant([]));
    const props: Record<string, Json> = s.properties ?? {};
    const whole = valid(s) as fc.Arbitrary<Record<string, unknown>>;
    for (const key of s.required ?? []) add(`required: ${key} missing`, whole.map((v) => Object.fromEntries(Object.entries(v).filter(([k]) => k !== key))));
    if (s.additionalProperties === false) add('additionalProperties: an unknown field', whole.map((v) => ({ ...v, unknownField: 1 })));
    for (const [key, sub] of Object.entries(props)) {
      add(`${key}: invalid`, fc.tuple(whole, invalid(sub)).map(([v, bad]) => ({ ...v, [key]: bad.value })));
    }
    if (typeof s.maxProperties === 'number') add('maxProperties', fc.constant(Object.fromEntries(Array.from({ length: s.maxProperties + 1 }, (_, i) => [`k${i}`, 'v']))));
    if (s.propertyNames) add('propertyNames', fc.constantFrom({ '': 'v' }, { ['k'.repeat(41)]: 'v' }, { 'a\u0001b': 'v' }));
    if (s.additionalProperties && typeof s.additionalProperties === 'object') {
      add('additionalProperties: an invalid value', invalid(s.additionalProperties).map((bad) => ({ key: bad.value })));
    }
  }
  if (types.includes('array')) {
    if ((s.minItems ?? 0) > 0) add('minItems: empty', fc.constant([]));
    if (s.items) add('items: an invalid item', invalid(s.items).map((bad) => [bad.value]));
  }
  return fc.oneof(...out).filter(ok);
}

/** A header value fetch and Node's HTTP parser carry unchanged (no leading or trailing white space, Latin-1 only, no controls). */
const sendableHeader = (v: unknown): v is string => typeof v === 'string' && /^(?:[\x21-\x7e\x80-\xff](?:[\x20-\x7e\x80-\xff]*[\x21-\x7e\x80-\xff])?)?$/.test(v);
/** A path segment fetch keeps as it is (`.` and `..` would be resolved away). */
const sendableSegment = (v: unknown): v is string => typeof v === 'string' && v !== '' && v !== '.' && v !== '..' && wellFormed(v);
const encode = (v: string) => encodeURIComponent(v).replace(/\./g, '%2E');

/**
 * Whether a parameter's text (what a URL or header carries) is allowed: an integer parameter
 * must be written in digits; any other is the string itself.
 */
export function paramConforms(schema: Json, text: string): boolean {
  const s = deref(schema);
  if (s.type === 'integer') return /^[0-9]{1,15}$/.test(text) && conforms(schema, Number(text));
  // An array in a query (style form): its items joined with commas, as the gateway also reads it.
  if (s.type === 'array') return conforms(schema, text.split(','));
  return conforms(schema, text);
}

/** Allowed texts of a parameter. */
function allowedParam(p: ApiOperation['params'][number], known: Known): fc.Arbitrary<string> {
  let arb = valid(p.schema).map(String);
  const k = known[p.name];
  if (k) arb = fc.oneof(arb, fc.constant(0).map(() => k()).filter((xs) => xs.length > 0).chain((xs) => fc.constantFrom(...xs)));
  arb = arb.filter((t) => paramConforms(p.schema, t));
  if (p.in === 'header') arb = arb.filter(sendableHeader);
  if (p.in === 'path') arb = arb.filter(sendableSegment);
  return arb;
}

/**
 * Forbidden texts of a parameter that can be sent as they are (and why they are forbidden;
 * undefined: left out), drawn once from the candidates (a fixed seed) so that a parameter with no
 * sendable forbidden text has none, instead of a filter that never ends.
 */
function forbiddenParam(p: ApiOperation['params'][number]): fc.Arbitrary<{ value: string | undefined; why: string }> | undefined {
  const texts = invalid(p.schema).map(({ value, why }) => ({ value: value === null || typeof value === 'object' ? undefined : String(value), why }));
  const extra: Array<{ value: string | undefined; why: string }> = [{ value: 'caf\u00e9', why: 'a non-ASCII character' }];
  if (p.in === 'header' || p.in === 'query') extra.push({ value: '', why: 'empty' });
  if (p.required && p.in === 'query') extra.push({ value: undefined, why: 'required: missing' });
  const sendable = ({ value, why }: { value: string | undefined; why: string }): boolean => {
    if (value === undefined) return why === 'required: missing';
    if (paramConforms(p.schema, value)) return false;
    if (p.in === 'header') return sendableHeader(value);
    if (p.in === 'path') return sendableSegment(value);
    return wellFormed(value);
  };
  const seen = new Set<string>();
  const pool = [...fc.sample(texts, { numRuns: 400, seed: 18 }), ...extra].filter((c) => {
    const key = `${c.value}`;
    if (seen.has(key) || !sendable(c)) return false;
    seen.add(key);
    return true;
  });
  return pool.length > 0 ? fc.constantFrom(...pool) : undefined;
}

interface Filled {
  params: Record<string, unknown>;
  body: unknown;
}

function toRequest(op: ApiOperation, filled: Filled): ApiRequest {
  let path = op.template;
  const query: Record<string, string> = {};
  const headers: Record<string, string> = {};
  for (const p of op.params) {
    const v = filled.params[p.name];
    if (v === undefined) continue;
    const text = String(v);
    if (p.in === 'path') path = path.replace(`{${p.name}}`, encode(text));
    else if (p.in === 'query') query[p.name] = text;
    else headers[p.name] = text;
  }
  return { method: op.method, path, query, headers, ...(op.body ? { body: filled.body } : {}) };
}

/** How each input of an operation is filled with allowed values (known ids mixed in). */
function allowedInputs(op: ApiOperation, known: Known, overrides: Overrides): { params: Record<string, fc.Arbitrary<string | undefined>>; body: fc.Arbitrary<unknown> } {
  const params: Record<string, fc.Arbitrary<string | undefined>> = {};
  for (const p of op.params) params[p.name] = p.required ? allowedParam(p, known) : fc.option(allowedParam(p, known), { nil: undefined });
  let body: fc.Arbitrary<unknown> = fc.constant(undefined);
  if (op.body) {
    const props: Record<string, Json> = deref(op.body).properties ?? {};
    const knownFields = Object.keys(props).filter((k) => known[k]);
    const overridden = Object.keys(props).filter((k) => overrides[k]);
    const base = (valid(op.body) as fc.Arbitrary<Record<string, unknown>>).chain((v) =>
      overridden.length === 0
        ? fc.constant(v)
        : fc.tuple(...overridden.map((k) => overrides[k]!)).map((xs) => {
            const merged = { ...v };
            overridden.forEach((k, i) => (merged[k] = xs[i]));
            return merged;
          }),
    );
    body = base.chain((v) =>
      knownFields.length === 0
        ? fc.constant(v)
        : fc
            .record(Object.fromEntries(knownFields.map((k) => [k, fc.option(fc.constant(0).map(() => known[k]!()).filter((xs) => xs.length > 0).chain((xs) => fc.constantFrom(...xs)), { nil: undefined })])))
            .map((over) => {
              const merged = { ...v };
              for (const [k, x] of Object.entries(over)) if (x !== undefined) merged[k] = x;
              return merged;
            })
            .filter((merged) => conforms(op.body, merged)),
    );
  }
  return { params, body };
}

/** Requests every input of which the document allows. */
export function allowedRequest(op: ApiOperation, known: Known = {}, overrides: Overrides = {}): fc.Arbitrary<ApiRequest> {
  const { params, body } = allowedInputs(op, known, overrides);
  return fc.record({ params: fc.record(params), body }).map((filled) => toRequest(op, filled));
}

/** Requests with exactly one input the document forbids (and which one, and why); undefined when it forbids none (no body, no constrained parameter). */
export function forbiddenRequest(op: ApiOperation, known: Known = {}, overrides: Overrides = {}): fc.Arbitrary<{ request: ApiRequest; violation: string }> | undefined {
  const { params, body } = allowedInputs(op, known, overrides);
  const choices: Array<fc.Arbitrary<{ request: ApiRequest; violation: string }>> = [];
  // A reused Idempotency-Key answers 422 before the input is looked at (SPEC §10): a request with
  // one forbidden input carries no key unless the key is that input.
  const withoutKey = { 'Idempotency-Key': undefined };
  for (const p of op.params) {
    const bad = forbiddenParam(p);
    if (!bad) continue;
    choices.push(
      fc.record({ params: fc.record(params), body, bad }).map(({ params: ps, body: b, bad: x }) => ({
        request: toRequest(op, { params: { ...ps, ...withoutKey, [p.name]: x.value }, body: b }),
        violation: `${p.in} ${p.name}: ${x.why} (${JSON.stringify(x.value)?.slice(0, 80)})`,
      })),
    );
  }
  if (op.body) {
    choices.push(
      fc.record({ params: fc.record(params), bad: invalid(op.body), safe: fc.record(Object.fromEntries(Object.entries(overrides))) }).map(({ params: ps, bad, safe }) => ({
        // A field the test overrides keeps a safe value wherever the generated one would be allowed.
        request: toRequest(op, { params: { ...ps, ...withoutKey }, body: withSafeFields(op.body, bad.value, safe) }),
        violation: `body: ${bad.why} (${JSON.stringify(bad.value)?.slice(0, 120)})`,
      })),
    );
  }
  return choices.length > 0 ? fc.oneof(...choices) : undefined;
}

/** A forbidden body whose overridden fields hold allowed values are given the test's safe ones instead. */
function withSafeFields(schema: Json, body: unknown, safe: Record<string, unknown>): unknown {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return body;
  const props: Record<string, Json> = deref(schema).properties ?? {};
  const out = { ...(body as Record<string, unknown>) };
  for (const [k, v] of Object.entries(safe)) if (k in out && props[k] && conforms(props[k], out[k])) out[k] = v;
  return out;
}
