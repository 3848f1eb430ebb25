// schema/openapi.yaml: a sound OpenAPI 3.1 document that covers the route table, served as JSON
// at /api/v1/openapi.json and readable at /docs; and the response validator every test relies on.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { REST_ROUTES } from '../../src/rest/routes.js';
import { http, startTestApp, type TestApp } from '../helpers/app.js';
import { buildDist } from '../helpers/build.js';
import { matchPath, OpenApiMismatch, openApi, openApiAjv, resolvePointer, validateResponse } from '../helpers/openapi.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const YAML_FILE = path.join(ROOT, 'schema/openapi.yaml');
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Every (method, path template, operation) of the document. */
function operations(): Array<{ method: string; template: string; item: any; op: any }> {
  return Object.entries<any>(openApi.paths).flatMap(([template, item]) =>
    METHODS.filter((m) => item[m]).map((method) => ({ method, template, item, op: item[method] })),
  );
}

const deref = (node: any): any => (node && typeof node.$ref === 'string' ? deref(resolvePointer(node.$ref)) : node);

/** Every `$ref` string in a JSON value, with where it was found. */
function refsIn(value: unknown, at = '#'): Array<{ ref: string; at: string }> {
  if (Array.isArray(value)) return value.flatMap((v, i) => refsIn(v, `${at}/${i}`));
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([k, v]) =>
    k === '$ref' && typeof v === 'string' ? [{ ref: v, at }] : refsIn(v, `${at}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`),
  );
}

describe('the document', () => {
  test('parses as OpenAPI 3.1.x, version 1.0.0, with the development server', () => {
    const doc = parse(readFileSync(YAML_FILE, 'utf8'));
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    expect(doc.info).toMatchObject({ title: expect.any(String), version: '1.0.0' });
    expect(doc.servers).toEqual(expect.arrayContaining([expect.objectContaining({ url: 'http://127.0.0.1:3000' })]));
    expect(doc).toEqual(openApi);
  });

  test('every $ref resolves', () => {
    const refs = refsIn(openApi);
    expect(refs.length).toBeGreaterThan(20);
    const broken = refs.filter(({ ref }) => !ref.startsWith('#/') || resolvePointer(ref) === undefined);
    expect(broken).toEqual([]);
  });

  test('every component schema compiles as JSON Schema 2020-12 in strict mode', () => {
    const ajv = openApiAjv();
    for (const name of Object.keys(openApi.components.schemas)) {
      expect(ajv.getSchema(`urn:wallet-gateway:openapi#/$defs/${name}`)).toBeDefined();
    }
  });

  test('every route of the REST table is documented with the same method and path, and vice versa', () => {
    const table = REST_ROUTES.map((r) => `${r.method} /api/v1${r.path.replace(/:(\w+)/g, '{$1}')}`).sort();
    const documented = operations()
      .filter(({ template }) => template.startsWith('/api/v1/') && template !== '/api/v1/openapi.json')
      .map(({ method, template }) => `${method.toUpperCase()} ${template}`)
      .sort();
    expect(documented).toEqual(table);
  });

  test('documents the operational endpoints and the document itself, without authentication', () => {
    for (const p of ['/healthz', '/readyz', '/metrics', '/api/v1/openapi.json']) {
      expect(openApi.paths[p]?.get).toBeDefined();
      expect(openApi.paths[p].get.security).toEqual([]);
    }
    expect(Object.keys(openApi.paths['/metrics'].get.responses['200'].content)).toEqual(['text/plain']);
  });

  test('operations have unique ids, a success response, and declare exactly their path parameters', () => {
    const ids = operations().map(({ op }) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { method, template, item, op } of operations()) {
      const where = `${method.toUpperCase()} ${template}`;
      expect([where, typeof op.operationId, typeof op.summary]).toEqual([where, 'string', 'string']);
      expect([where, Object.keys(op.responses).some((s) => /^2\d\d$/.test(s))]).toEqual([where, true]);
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map(deref);
      const declared = params.filter((p) => p.in === 'path').map((p) => p.name).sort();
      const inTemplate = [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
      expect([where, declared]).toEqual([where, inTemplate]);
      for (const p of params) {
        if (p.in === 'path') expect([where, p.name, p.required]).toEqual([where, p.name, true]);
        expect([where, p.name, typeof p.schema]).toEqual([where, p.name, 'object']);
      }
    }
  });

  test('every response has a description and the X-Request-Id header; every error answers the Error schema', () => {
    for (const { method, template, op } of operations()) {
      for (const [status, ref] of Object.entries<any>(op.responses)) {
        const where = `${method.toUpperCase()} ${template} ${status}`;
        const response = deref(ref);
        expect([where, typeof (ref.description ?? response.description)]).toEqual([where, 'string']);
        expect([where, deref(response.headers?.['X-Request-Id'])?.required]).toEqual([where, true]);
        if (Number(status) >= 400) {
          const schema = response.content?.['application/json']?.schema;
          const usesError = schema?.$ref === '#/components/schemas/Error' || schema?.allOf?.[0]?.$ref === '#/components/schemas/Error';
          expect([where, usesError]).toEqual([where, true]);
        }
      }
    }
  });

  test('the /api/v1 operations answer 401, 429, 500 and 503; the body-reading one 413 and 415', () => {
    for (const { method, template, op } of operations()) {
      if (!template.startsWith('/api/v1/') || template === '/api/v1/openapi.json') continue;
      const where = `${method.toUpperCase()} ${template}`;
      expect([where, op.security]).toEqual([where, undefined]); // the document-wide bearerAuth
      for (const s of ['200', '400', '401', '404', '429', '500', '503']) expect([where, s in op.responses]).toEqual([where, true]);
      expect([where, deref(deref(op.responses['429']).headers['Retry-After']).required]).toEqual([where, true]);
    }
    const create = openApi.paths['/api/v1/wallet/request-payment'].post;
    for (const s of ['409', '413', '415', '422']) expect([s, s in create.responses]).toEqual([s, true]);
    expect('409' in openApi.paths['/api/v1/wallet/payment-request/{requestId}/cancel'].post.responses).toBe(true);
  });

  test('the POST operations take an optional Idempotency-Key of 1-255 printable characters', () => {
    for (const { template, op } of operations().filter((o) => o.method === 'post')) {
      const key = (op.parameters ?? []).map(deref).find((p: any) => p.in === 'header' && p.name === 'Idempotency-Key');
      expect([template, key?.required, key?.schema]).toEqual([template, false, expect.objectContaining({ minLength: 1, maxLength: 255 })]);
      expect([template, Object.keys(op.responses['200'].headers)]).toEqual([template, expect.arrayContaining(['Idempotent-Replayed'])]);
    }
  });

  test('bearerAuth is an HTTP bearer scheme in JWT format that names the sk_test_ and sk_live_ prefixes', () => {
    expect(openApi.security).toEqual([{ bearerAuth: [] }]);
    const scheme = openApi.components.securitySchemes.bearerAuth;
    expect(scheme).toMatchObject({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
    expect(scheme.description).toMatch(/sk_test_/);
    expect(scheme.description).toMatch(/sk_live_/);
  });

  test('the seed shapes: Error, Transaction (closed: no identifiers), WalletIdResponse, PaymentRequest', () => {
    const s = openApi.components.schemas;
    expect(s.Error).toMatchObject({ type: 'object', additionalProperties: false, required: ['statusCode', 'message'] });
    expect(Object.keys(s.Error.properties).sort()).toEqual(['message', 'statusCode']);
    expect(s.Error.properties.statusCode.type).toBe('integer');
    expect(s.Transaction.additionalProperties).toBe(false);
    expect(Object.keys(s.Transaction.properties).sort()).toEqual(
      ['amount', 'capturedAmount', 'consentReceipt', 'createdAt', 'currency', 'description', 'id', 'paymentProvider', 'paymentReference', 'refundedAmount', 'status', 'type', 'updatedAt'],
    );
    expect(s.Transaction.properties.status.enum).toEqual(['PENDING', 'PROCESSING', 'COMPLETED', 'FAILED', 'CANCELLED', 'REFUNDED']);
    expect(Object.keys(s.WalletIdResponse.properties)).toEqual(['walletId']);
    expect(s.PaymentRequest).toMatchObject({
      additionalProperties: false,
      required: ['walletId', 'amount', 'description', 'merchantName'],
      properties: {
        amount: { type: 'number', minimum: 0.01, maximum: 1000000, multipleOf: 0.01 },
        // 1-255 / 1-100 characters after trimming: the pattern says it (maxLength would refuse surrounding spaces the server trims).
        description: { minLength: 1, pattern: expect.stringContaining('{0,253}') },
        merchantName: { minLength: 1, pattern: expect.stringContaining('{0,98}') },
      },
    });
    expect(Object.keys(s.PaymentRequestResponse.properties).sort()).toEqual(['expiresAt', 'message', 'paymentRequestId', 'paymentUrl', 'status', 'success']);
    expect(s.PaymentRequestStatus.required).toEqual(
      expect.arrayContaining(['id', 'status', 'amount', 'currency', 'description', 'createdAt', 'expiresAt', 'merchantName', 'updatedAt', 'transactionId']),
    );
    expect(deref(s.PaymentRequestStatus.properties.status).enum).toEqual(['PENDING', 'APPROVED', 'REJECTED', 'EXPIRED', 'CANCELLED']);
  });

  test('every example matches its schema', () => {
    const ajv = openApiAjv();
    let checked = 0;
    const check = (where: string, schema: any, value: unknown) => {
      const validate = ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', '"urn:wallet-gateway:openapi#/$defs/')));
      expect([where, validate(value), validate.errors ?? null]).toEqual([where, true, null]);
      checked++;
    };
    for (const { method, template, op } of operations()) {
      const media = [
        ...Object.entries<any>(op.requestBody?.content ?? {}).map(([t, m]) => [`${template} ${method} request ${t}`, m] as const),
        ...Object.entries<any>(op.responses).flatMap(([status, r]) =>
          Object.entries<any>(deref(r).content ?? {}).map(([t, m]) => [`${template} ${method} ${status} ${t}`, m] as const),
        ),
      ];
      for (const [where, m] of media) {
        if (m.example !== undefined) check(where, m.schema, m.example);
        for (const [name, ex] of Object.entries<any>(m.examples ?? {})) check(`${where} ${name}`, m.schema, deref(ex).value);
      }
    }
    for (const [name, schema] of Object.entries<any>(openApi.components.schemas)) {
      for (const [key, prop] of Object.entries<any>(schema.properties ?? {})) {
        for (const ex of prop.examples ?? []) check(`${name}.${key}`, prop, ex);
      }
    }
    expect(checked).toBeGreaterThan(10);
  });

  test('the compiled build finds the document too (dist/src/openapi → schema/openapi.yaml)', async () => {
    await buildDist();
    const out = execFileSync(
      process.execPath,
      ['--input-type=module', '-e', "const m = await import('./dist/src/openapi/openapi.js'); console.log(JSON.stringify([m.openApiFile(), m.openApiDocument().openapi]));"],
      { cwd: ROOT, encoding: 'utf8' },
    );
    expect(JSON.parse(out)).toEqual([YAML_FILE, openApi.openapi]);
  });
});

describe('the response validator', () => {
  const json = 'application/json; charset=utf-8';
  const ok = { id: '3f1c2a9e-7b4d-4c1e-9a53-2d8f6b0e4a17' };

  test('matches paths like the router does', () => {
    expect(matchPath('/api/v1/wallet/payment-request/abc')?.template).toBe('/api/v1/wallet/payment-request/{requestId}');
    expect(matchPath('/api/v1/wallet/payment-request/abc/cancel')?.template).toBe('/api/v1/wallet/payment-request/{requestId}/cancel');
    expect(matchPath('/api/v1/account/x/')?.template).toBe('/api/v1/account/{identifier}');
    expect(matchPath('/api/v1/account/')).toBeUndefined();
  });

  test('accepts a documented response', () => {
    expect(() => validateResponse('GET', '/api/v1/account/abc?x=1', 200, json, { walletId: 'wlt_1' })).not.toThrow();
    expect(() => validateResponse('GET', '/api/v1/account/abc', 404, json, { statusCode: 404, message: 'Account not found' })).not.toThrow();
    expect(() => validateResponse('HEAD', '/api/v1/account/abc', 404, null, undefined)).not.toThrow();
    expect(() => validateResponse('GET', '/metrics', 200, 'text/plain; version=0.0.4', '# HELP x\n')).not.toThrow();
    expect(() => validateResponse('POST', '/graphql', 200, json, { data: null })).not.toThrow();
  });

  test('rejects a body off its schema, naming the field', () => {
    const tx = {
      ...ok,
      amount: 1,
      currency: 'ETB',
      status: 'COMPLETED',
      type: 'WALLET_PAYMENT',
      description: 'd',
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-01T00:00:00.000Z',
      paymentProvider: 'WALLET',
      paymentReference: 'WPAY000000000001-ABC123',
      consentReceipt: null,
      refundedAmount: 0,
      capturedAmount: 1,
    };
    expect(() => validateResponse('GET', `/api/v1/wallet/transaction/${ok.id}`, 200, json, tx)).not.toThrow();
    expect(() => validateResponse('GET', `/api/v1/wallet/transaction/${ok.id}`, 200, json, { ...tx, walletId: 'wlt_1' })).toThrow(
      /must NOT have additional properties "walletId"/,
    );
    expect(() => validateResponse('GET', `/api/v1/wallet/transaction/${ok.id}`, 200, json, { ...tx, amount: '1' })).toThrow(/\/amount must be number/);
  });

  test('rejects an undocumented status, content type or method', () => {
    expect(() => validateResponse('GET', '/api/v1/account/x', 402, json, { statusCode: 402, message: 'x' })).toThrow(
      OpenApiMismatch,
    );
    expect(() => validateResponse('GET', '/api/v1/account/x', 402, json, { statusCode: 402, message: 'x' })).toThrow(/status 402 is not documented/);
    expect(() => validateResponse('GET', '/api/v1/account/x', 200, 'text/html', '<p>')).toThrow(/content type "text\/html"/);
    expect(() => validateResponse('DELETE', '/api/v1/account/x', 200, json, { walletId: 'x' })).toThrow(/only an error status/);
  });

  test('requires the Error body, with statusCode equal to the HTTP status, on unknown paths and errors', () => {
    expect(() => validateResponse('GET', '/nope', 404, json, { statusCode: 404, message: 'Not found' })).not.toThrow();
    expect(() => validateResponse('GET', '/nope', 200, json, { statusCode: 404, message: 'Not found' })).toThrow(/only an error status/);
    expect(() => validateResponse('GET', '/nope', 404, json, { error: 'Not found' })).toThrow(/not the Error schema/);
    expect(() => validateResponse('GET', '/api/v1/account/x', 404, json, { statusCode: 400, message: 'x' })).toThrow(/statusCode 400/);
    expect(() => validateResponse('GET', '/api/v1/account/x', 404, json, { statusCode: 404, message: 'x', code: 'X' })).toThrow(
      /additional properties "code"/,
    );
  });

  test('checks required headers when given', () => {
    const headers = new Headers({ 'content-type': json });
    expect(() => validateResponse('GET', '/api/v1/account/x', 200, json, { walletId: 'w' }, headers)).toThrow(/X-Request-Id is missing/);
    headers.set('x-request-id', 'r1');
    expect(() => validateResponse('GET', '/api/v1/account/x', 200, json, { walletId: 'w' }, headers)).not.toThrow();
    expect(() => validateResponse('GET', '/api/v1/account/x', 429, json, { statusCode: 429, message: 'slow down' }, headers)).toThrow(
      /Retry-After is missing/,
    );
    headers.set('retry-after', '1');
    expect(() => validateResponse('GET', '/api/v1/account/x', 429, json, { statusCode: 429, message: 'slow down' }, headers)).not.toThrow();
  });
});

describe('served', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => {
    await app.close();
  });

  test('GET /api/v1/openapi.json answers the parsed YAML as JSON, without authentication', async () => {
    const res = await http(app.baseUrl, '/api/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('x-request-id')).toBeTruthy();
    expect(res.body).toEqual(parse(readFileSync(YAML_FILE, 'utf8')));
  });

  test.each(['/healthz', '/readyz', '/metrics'])('GET %s answers 200 as documented, without authentication', async (p) => {
    const res = await http(app.baseUrl, p); // http() validates the body against the document
    expect(res.status).toBe(200);
  });

  test('GET /docs is an HTML page that loads the document and all of its assets from this server', async () => {
    const res = await http(app.baseUrl, '/docs');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const html = res.body as string;
    expect(html).toContain('data-openapi-url="/api/v1/openapi.json"');
    expect(html).not.toMatch(/<script>(?!<\/script>)/); // no inline script: works under a strict CSP
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(assets).toEqual(expect.arrayContaining(['/docs/assets/swagger-ui-bundle.js', '/docs/assets/swagger-ui.css', '/docs/assets/docs-init.js']));
    for (const asset of assets) {
      expect(asset.startsWith('/')).toBe(true); // nothing from another host: the machine may be offline
      const r = await fetch(`${app.baseUrl}${asset}`);
      const bytes = (await r.arrayBuffer()).byteLength;
      expect([asset, r.status, bytes > 0]).toEqual([asset, 200, true]);
    }
    const init = await (await fetch(`${app.baseUrl}/docs/assets/docs-init.js`)).text();
    expect(init).toContain('SwaggerUIBundle');
  });

  test('only the listed assets are served', async () => {
    for (const p of ['/docs/assets/package.json', '/docs/assets/..%2Fpackage.json', '/docs/assets/index.html']) {
      const res = await http(app.baseUrl, p);
      expect([p, res.status, res.body]).toEqual([p, 404, { statusCode: 404, message: 'Not found' }]);
    }
  });

  test('a wrong method on the document answers 405 with the Error body', async () => {
    const res = await http(app.baseUrl, '/api/v1/openapi.json', { method: 'POST', body: {} });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toMatch(/GET/);
    expect(res.body).toEqual({ statusCode: 405, message: 'Method not allowed' });
  });
});
