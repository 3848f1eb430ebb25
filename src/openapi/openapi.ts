import { createReadStream, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import Router from '@koa/router';
import { parse } from 'yaml';
import type { GatewayState } from '../http/state.js';
import { projectRoot } from '../project-root.js';

/** Where the document is served, as JSON. */
export const OPENAPI_JSON_PATH = '/api/v1/openapi.json';
/** The readable docs page. */
export const DOCS_PATH = '/docs';
/** Prefix of the docs page's static assets. */
export const DOCS_ASSETS_PATH = '/docs/assets';

/** Absolute path of schema/openapi.yaml. */
export function openApiFile(): string {
  return path.join(projectRoot(), 'schema', 'openapi.yaml');
}

let cached: Readonly<Record<string, unknown>> | undefined;

/** The OpenAPI document of the REST surface, read and parsed once per process. */
export function openApiDocument(): Readonly<Record<string, unknown>> {
  if (!cached) {
    const file = openApiFile();
    const doc: unknown = parse(readFileSync(file, 'utf8'), { prettyErrors: true, uniqueKeys: true });
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new Error(`OpenAPI: ${file} is not a mapping`);
    cached = Object.freeze(doc as Record<string, unknown>);
  }
  return cached;
}

/** Files of swagger-ui-dist the page loads; nothing else of the package is reachable. */
const PACKAGE_ASSETS: Readonly<Record<string, string>> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui.css.map': 'application/json; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui-bundle.js.map': 'application/json; charset=utf-8',
  'favicon-16x16.png': 'image/png',
  'favicon-32x32.png': 'image/png',
};

function swaggerUiDir(): string {
  return path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
}

/** Starts Swagger UI from a file, not inline, so the page also works under a strict Content-Security-Policy. */
const INIT_SCRIPT = `window.addEventListener('load', function () {
  var root = document.getElementById('swagger-ui');
  window.ui = SwaggerUIBundle({
    url: root.getAttribute('data-openapi-url'),
    dom_id: '#swagger-ui',
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
    docExpansion: 'list',
    defaultModelsExpandDepth: 1,
    displayOperationId: false,
    validatorUrl: 'none',
    tryItOutEnabled: false
  });
});
`;

/**
 * The page's own style. On a phone (390 px) Swagger UI's descriptions ran off the right edge:
 * their Markdown tables and long inline code are wider than the screen. Tables scroll sideways
 * inside their own box, code and long words wrap, and nothing makes the page wider than the screen.
 */
const PAGE_STYLE = `body { margin: 0; background: #fafafa; }
.docs-header { padding: 12px 20px; background: #1b1f24; color: #fff; font: 14px/1.4 sans-serif; overflow-wrap: anywhere; }
.docs-header a { color: #9ecbff; }
.swagger-ui { overflow-wrap: anywhere; }
.swagger-ui .markdown table, .swagger-ui .renderedMarkdown table { display: block; max-width: 100%; overflow-x: auto; }
.swagger-ui .markdown code, .swagger-ui .renderedMarkdown code { white-space: pre-wrap; word-break: break-word; }
.swagger-ui pre { max-width: 100%; overflow-x: auto; }
@media (max-width: 600px) {
  .swagger-ui .wrapper { padding: 0 10px; }
  .swagger-ui .info { margin: 20px 0; }
  .swagger-ui .opblock .opblock-summary { flex-wrap: wrap; }
  .swagger-ui .opblock .opblock-summary-path { max-width: 100%; }
  .swagger-ui table { display: block; max-width: 100%; overflow-x: auto; }
  .swagger-ui .servers > label { margin-right: 0; max-width: 100%; }
  .swagger-ui .servers select { max-width: 100%; }
}
`;

const OWN_ASSETS: Readonly<Record<string, { type: string; body: string }>> = {
  'docs-init.js': { type: 'text/javascript; charset=utf-8', body: INIT_SCRIPT },
  'docs.css': { type: 'text/css; charset=utf-8', body: PAGE_STYLE },
};

function docsPage(title: string): string {
  const escaped = title.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>${escaped} — API reference</title>
    <link rel="stylesheet" href="${DOCS_ASSETS_PATH}/swagger-ui.css">
    <link rel="stylesheet" href="${DOCS_ASSETS_PATH}/docs.css">
    <link rel="icon" type="image/png" href="${DOCS_ASSETS_PATH}/favicon-32x32.png" sizes="32x32">
    <link rel="icon" type="image/png" href="${DOCS_ASSETS_PATH}/favicon-16x16.png" sizes="16x16">
  </head>
  <body>
    <div class="docs-header">${escaped} — the machine-readable document is at <a href="${OPENAPI_JSON_PATH}">${OPENAPI_JSON_PATH}</a></div>
    <div id="swagger-ui" data-openapi-url="${OPENAPI_JSON_PATH}"></div>
    <script src="${DOCS_ASSETS_PATH}/swagger-ui-bundle.js" charset="utf-8"></script>
    <script src="${DOCS_ASSETS_PATH}/docs-init.js" charset="utf-8"></script>
  </body>
</html>
`;
}

/**
 * Serves the OpenAPI document (`GET /api/v1/openapi.json`, no authentication) and a readable
 * docs page (`GET /docs`, Swagger UI from the installed swagger-ui-dist, no CDN).
 * The document is parsed when the router is built, so a broken YAML fails at start.
 */
export function createDocsRouter(): Router<GatewayState> {
  const doc = openApiDocument();
  const title = String((doc.info as { title?: unknown } | undefined)?.title ?? 'API');
  const page = docsPage(title);
  const assetsDir = swaggerUiDir();
  const router = new Router<GatewayState>();

  router.get(OPENAPI_JSON_PATH, (ctx) => {
    ctx.state.route = `GET ${OPENAPI_JSON_PATH}`;
    ctx.set('Cache-Control', 'no-cache');
    ctx.type = 'application/json';
    ctx.body = doc;
  });

  router.get(DOCS_PATH, (ctx) => {
    ctx.state.route = `GET ${DOCS_PATH}`;
    ctx.set('Cache-Control', 'no-cache');
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = page;
  });

  router.get(`${DOCS_ASSETS_PATH}/:file`, (ctx) => {
    ctx.state.route = `GET ${DOCS_ASSETS_PATH}/:file`;
    const name = ctx.params.file ?? '';
    const own = Object.hasOwn(OWN_ASSETS, name) ? OWN_ASSETS[name] : undefined;
    if (own) {
      ctx.set('Cache-Control', 'no-cache');
      ctx.type = own.type;
      ctx.body = own.body;
      return;
    }
    const type = Object.hasOwn(PACKAGE_ASSETS, name) ? PACKAGE_ASSETS[name] : undefined;
    if (!type) {
      ctx.status = 404; // explicit, so the app's Error body keeps the status
      return;
    }
    const file = path.join(assetsDir, name);
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.type = type;
    ctx.length = statSync(file).size;
    ctx.body = createReadStream(file);
  });

  return router;
}
