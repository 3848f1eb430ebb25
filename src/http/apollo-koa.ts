import { HeaderMap, type ApolloServer, type BaseContext, type ContextFunction } from '@apollo/server';
import type { Context as KoaContext, Middleware } from 'koa';
import { Readable } from 'node:stream';
import { readJsonBody } from './body.js';
import { apolloRequestSpan, tracing } from '../observability/tracing.js';
import { documentError, documentProblem } from '../graphql/document-limits.js';

/** The operation's document text, where Apollo will look for it (a POST body's or a GET's `query`). */
function documentOf(method: string, body: unknown, query: KoaContext['query']): string | undefined {
  const text = method === 'POST' ? (body as { query?: unknown } | null | undefined)?.query : query.query;
  return typeof text === 'string' ? text : undefined;
}

/**
 * Apollo Server 5 on Koa, through Apollo's documented integration entry point
 * (`executeHTTPGraphQLRequest`). `@as-integrations/koa` does this too, but it declares Node >= 22;
 * this is its few lines, reading the body with the gateway's own limits (64 KiB, JSON only).
 */
export function apolloKoaMiddleware<TContext extends BaseContext>(
  server: ApolloServer<TContext>,
  context: ContextFunction<[KoaContext], TContext>,
  /** Called with the operation's context once it has been answered (the door's RateLimit-* headers). */
  answered?: (ctx: KoaContext, context: TContext | undefined) => void,
): Middleware {
  return async (ctx) => {
    let made: TContext | undefined;
    const headers = new HeaderMap();
    for (const [key, value] of Object.entries(ctx.headers)) {
      if (value !== undefined) headers.set(key, Array.isArray(value) ? value.join(', ') : value);
    }
    const body = ctx.method === 'POST' ? await readJsonBody(ctx) : undefined;
    // Bounded before anything parses it (src/graphql/document-limits.ts): Apollo's parser would
    // overflow the stack on a deeply nested document and answer an internal error.
    const source = documentOf(ctx.method, body, ctx.query);
    const problem = source === undefined ? undefined : documentProblem(source);
    if (problem) {
      const { message, extensions } = documentError(problem);
      ctx.status = 400;
      ctx.type = ctx.accepts('application/json', 'application/graphql-response+json') || 'application/json';
      ctx.body = JSON.stringify({ errors: [{ message, extensions }] });
      return;
    }
    const execute = () =>
      server.executeHTTPGraphQLRequest({
        httpGraphQLRequest: { method: ctx.method.toUpperCase(), headers, search: ctx.querystring, body },
        context: async () => (made = await context(ctx)),
      });
    // With tracing on, the operation is a span (named once Apollo has parsed it: src/graphql/apollo.ts).
    const response = tracing.on ? await apolloRequestSpan(execute) : await execute();
    for (const [key, value] of response.headers) ctx.set(key, value);
    answered?.(ctx, made);
    ctx.status = response.status ?? 200;
    if (response.body.kind === 'complete') {
      ctx.body = response.body.string;
    } else {
      ctx.body = Readable.from(response.body.asyncIterator);
    }
  };
}
