import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { openApiDocument, openApiFile } from '../../src/openapi/openapi.js';

/**
 * Response validation against schema/openapi.yaml. Every REST response a test receives through
 * `http()` goes through `validateResponse`, so the document and the server cannot drift apart
 * unnoticed: an undocumented status, a body off its schema, a missing required header or an
 * error body whose `statusCode` differs from the HTTP status fails the test that saw it.
 */

type Json = any;

const SCHEMA_ID = 'urn:wallet-gateway:openapi';
const COMPONENT_SCHEMA_REF = '#/components/schemas/';
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** Paths the document does not cover on purpose: GraphQL has its own SDL, /docs is a page for people. */
const NOT_REST = [/^\/graphql(\/|$)/i, /^\/docs(\/|$)/i];

export class OpenApiMismatch extends Error {
  override name = 'OpenApiMismatch';
}

/**
 * The document, as loaded by the gateway itself (`openApiDocument`), parsed once per version of
 * the file rather than once per test file: the first file keeps it as JSON under node_modules/.cache,
 * keyed by the YAML's hash, and the others read that (parsing the YAML costs ~0.4 CPU-s a file).
 */
export const openApi: Json = documentOnce();

function documentOnce(): Json {
  const yaml = readFileSync(openApiFile());
  const dir = path.resolve(path.dirname(openApiFile()), '..', 'node_modules', '.cache', 'wallet-gateway-tests');
  const file = path.join(dir, `openapi-${createHash('sha256').update(yaml).digest('hex').slice(0, 16)}.json`);
  try {
    return Object.freeze(JSON.parse(readFileSync(file, 'utf8')));
  } catch {
    const doc = openApiDocument();
    mkdirSync(dir, { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(doc));
    renameSync(tmp, file);
    return doc;
  }
}

/** Follows a local `$ref` (`#/a/b`) to the object it names. */
export function resolvePointer(ref: string, doc: Json = openApi): Json {
  if (!ref.startsWith('#/')) throw new OpenApiMismatch(`only local $refs are supported, got ${ref}`);
  let node: Json = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (node === null || typeof node !== 'object' || !(key in node)) return undefined;
    node = node[key];
  }
  return node;
}

/** A Reference Object or the object itself, dereferenced (repeatedly). */
function deref(node: Json): Json {
  const seen = new Set<string>();
  while (node && typeof node === 'object' && typeof node.$ref === 'string') {
    if (seen.has(node.$ref)) throw new OpenApiMismatch(`$ref cycle at ${node.$ref}`);
    seen.add(node.$ref);
    const target = resolvePointer(node.$ref);
    if (target === undefined) throw new OpenApiMismatch(`unresolved $ref ${node.$ref}`);
    node = target;
  }
  return node;
}

/** Deep copy of a schema whose component refs point into the ajv resource holding them. */
function retarget(node: Json): Json {
  if (Array.isArray(node)) return node.map(retarget);
  if (node === null || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) {
    out[k] =
      k === '$ref' && typeof v === 'string' && v.startsWith(COMPONENT_SCHEMA_REF)
        ? `${SCHEMA_ID}#/$defs/${v.slice(COMPONENT_SCHEMA_REF.length)}`
        : retarget(v);
  }
  return out;
}

function createAjv(): Ajv2020 {
  // multipleOfPrecision: `multipleOf: 0.01` on a double (12.34 / 0.01 = 1233.9999999999998).
  const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false, validateFormats: true, multipleOfPrecision: 9 });
  // ajv-formats is CommonJS; its plugin is module.exports (and .default on it).
  const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as unknown as (a: Ajv2020) => void;
  addFormats(ajv);
  // OpenAPI's own format names for numbers are annotations only.
  for (const name of ['int32', 'int64', 'float', 'double']) ajv.addFormat(name, { type: 'number', validate: () => true });
  // OpenAPI's base vocabulary adds these annotation keywords to JSON Schema.
  ajv.addVocabulary(['discriminator', 'xml', 'externalDocs', 'example']);
  ajv.addSchema({ $id: SCHEMA_ID, $defs: retarget(openApi.components?.schemas ?? {}) });
  return ajv;
}

let ajvInstance: Ajv2020 | undefined;
/** The ajv instance with every component schema compiled (strict: unknown keywords are errors). */
export function openApiAjv(): Ajv2020 {
  ajvInstance ??= createAjv();
  return ajvInstance;
}

const compiled = new Map<string, ValidateFunction>();
function validatorFor(key: string, schema: Json): ValidateFunction {
  let fn = compiled.get(key);
  if (!fn) {
    fn = openApiAjv().compile(retarget(schema));
    compiled.set(key, fn);
  }
  return fn;
}

/** The Error schema every error body must match. */
function errorValidator(): ValidateFunction {
  return validatorFor('#/components/schemas/Error', { $ref: '#/components/schemas/Error' });
}

interface PathEntry {
  template: string;
  regex: RegExp;
  literalLength: number;
  item: Json;
}

let pathEntries: PathEntry[] | undefined;
/** The documented path templates, most specific first; matched like the router does (any case, optional trailing slash). */
function paths(): PathEntry[] {
  pathEntries ??= Object.entries<Json>(openApi.paths ?? {})
    .map(([template, item]) => {
      const source = template
        .split(/(\{[^}]+\})/)
        .map((part) => (part.startsWith('{') ? '([^/]+)' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
        .join('');
      return {
        template,
        regex: new RegExp(`^${source}/?$`, 'i'),
        literalLength: template.replace(/\{[^}]+\}/g, '').length,
        item,
      };
    })
    .sort((a, b) => b.literalLength - a.literalLength);
  return pathEntries;
}

/** The documented path template a request path falls under, if any. */
export function matchPath(pathname: string): { template: string; item: Json } | undefined {
  return paths().find((p) => p.regex.test(pathname));
}

function describeErrors(errors: readonly ErrorObject[] | null | undefined): string {
  return (errors ?? [])
    .map((e) => {
      const where = e.instancePath || '(body)';
      const p = e.params as Record<string, unknown>;
      const detail =
        e.keyword === 'additionalProperties'
          ? ` "${String(p.additionalProperty)}"`
          : e.keyword === 'enum'
            ? ` ${JSON.stringify(p.allowedValues)}`
            : e.keyword === 'const'
              ? ` ${JSON.stringify(p.allowedValue)}`
              : '';
      return `  - ${where} ${e.message ?? e.keyword}${detail}`;
    })
    .join('\n');
}

function show(body: unknown): string {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  if (text === undefined) return '(empty)';
  return text.length > 600 ? `${text.slice(0, 600)}… (${text.length} chars)` : text;
}

function mediaType(contentType: string | null | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

const isJsonMedia = (media: string): boolean => media === 'application/json' || media.endsWith('+json');

/** The Content entry of a response for a media type (exact, then `type/*`, then `*\/*`). */
function contentFor(content: Record<string, Json>, media: string): { key: string; entry: Json } | undefined {
  const entries = Object.entries(content);
  const exact = entries.find(([k]) => k.toLowerCase() === media);
  const range = entries.find(([k]) => k.endsWith('/*') && media.startsWith(k.slice(0, -1).toLowerCase()));
  const any = entries.find(([k]) => k === '*/*');
  const hit = exact ?? range ?? any;
  return hit ? { key: hit[0], entry: hit[1] } : undefined;
}

const isEmpty = (body: unknown): boolean => body === undefined || body === '' || body === null;

function checkErrorBody(fail: (m: string) => never, status: number, body: unknown): void {
  if (status >= 400 && body !== null && typeof body === 'object' && 'statusCode' in body) {
    const code = (body as { statusCode: unknown }).statusCode;
    if (code !== status) fail(`the Error body says statusCode ${JSON.stringify(code)} but the HTTP status is ${status}`);
  }
}

function checkHeaders(fail: (m: string) => never, declared: Record<string, Json> | undefined, headers: Headers | undefined): void {
  if (!headers || !declared) return;
  for (const [name, ref] of Object.entries(declared)) {
    if (name.toLowerCase() === 'content-type') continue; // ignored by OpenAPI
    const header = deref(ref);
    const value = headers.get(name);
    if (value === null) {
      if (header.required) fail(`the required response header ${name} is missing`);
      continue;
    }
    if (!header.schema) continue;
    const schema = deref(header.schema);
    const typed = schema.type === 'integer' || schema.type === 'number' ? (/^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value) : value;
    const validate = validatorFor(`header ${name} ${JSON.stringify(header.schema)}`, header.schema);
    if (!validate(typed)) fail(`response header ${name}: ${JSON.stringify(value)} does not match\n${describeErrors(validate.errors)}`);
  }
}

/**
 * Checks one REST response against the document. Throws an `OpenApiMismatch` naming the call,
 * the documented operation and every difference when:
 * - the path is documented but the method or the status is not (and the status is not covered
 *   by a `4XX`/`default` entry);
 * - the content type is not one the response documents, or the body does not match its schema;
 * - a required response header (`X-Request-Id`, `Retry-After` on 429) is missing (when
 *   `headers` is given), or a documented header's value is off its schema;
 * - an error body's `statusCode` differs from the HTTP status.
 * A path the document does not know (or a method it does not document there) must answer an
 * error status with the Error body. `/graphql` and `/docs` are not REST and are not checked.
 * For a JSON content type pass the parsed body, otherwise the text.
 */
export function validateResponse(
  method: string,
  path: string,
  status: number,
  contentType: string | null | undefined,
  body: unknown,
  headers?: Headers,
): void {
  const verb = method.toUpperCase();
  const pathname = new URL(path, 'http://openapi.invalid').pathname;
  if (NOT_REST.some((re) => re.test(pathname))) return;
  const call = `${verb} ${pathname} → ${status}`;
  let documented = 'not in the document';
  const fail = (message: string): never => {
    throw new OpenApiMismatch(
      `OpenAPI: ${call} disagrees with schema/openapi.yaml (${documented}): ${message}\n  content-type: ${contentType ?? '(none)'}\n  body: ${show(body)}`,
    );
  };
  const media = mediaType(contentType);

  const undocumented = (why: string): void => {
    documented = why;
    if (status < 400) fail(`only an error status may answer here`);
    if (status === 405 && headers && !headers.get('allow')) fail('a 405 must carry an Allow header');
    if (verb === 'HEAD') return;
    if (!isJsonMedia(media)) fail('an error body must be application/json');
    const validate = errorValidator();
    if (!validate(body)) fail(`the body is not the Error schema\n${describeErrors(validate.errors)}`);
    checkErrorBody(fail, status, body);
    if (headers && !headers.get('x-request-id')) fail('the response header X-Request-Id is missing');
  };

  const match = matchPath(pathname);
  if (!match) return undocumented('unknown path');

  let operation = match.item[verb.toLowerCase()];
  const headOnly = verb === 'HEAD' && !operation;
  if (headOnly) operation = match.item.get;
  if (!operation || !(METHODS as readonly string[]).includes(verb.toLowerCase())) {
    // The router's automatic OPTIONS answer (Allow, no body) is not an API operation.
    if (verb === 'OPTIONS' && status < 300 && isEmpty(body)) return;
    return undocumented(`${verb} is not documented on ${match.template}`);
  }

  const opName = `${headOnly ? 'GET' : verb} ${match.template}`;
  documented = opName;
  const responses: Record<string, Json> = operation.responses ?? {};
  const key = [String(status), `${String(status)[0]}XX`, 'default'].find((k) => k in responses);
  if (!key) fail(`status ${status} is not documented (documented: ${Object.keys(responses).join(', ')})`);
  documented = `${opName}, response ${key}`;
  const response = deref(responses[key!]);

  checkHeaders(fail, response.headers, headers);
  if (headOnly || verb === 'HEAD') {
    if (!isEmpty(body)) fail('a HEAD response must have no body');
    return;
  }

  const content: Record<string, Json> | undefined = response.content;
  if (!content || Object.keys(content).length === 0) {
    if (!isEmpty(body)) fail('the response documents no body, but one was sent');
    return;
  }
  if (body === undefined || body === '') fail('the response documents a body, but none was sent');
  const hit = contentFor(content, media);
  if (!hit) fail(`content type "${media}" is not documented (documented: ${Object.keys(content).join(', ')})`);
  const schema = hit!.entry.schema;
  if (schema) {
    const validate = validatorFor(`${opName} ${key} ${hit!.key}`, schema);
    if (!validate(body)) fail(`the body does not match the schema\n${describeErrors(validate.errors)}`);
  }
  checkErrorBody(fail, status, body);
}
