import { HeaderMap, type ApolloServer, type BaseContext, type ContextFunction } from '@apollo/server';
import type { Context as KoaContext, Middleware } from 'koa';
import { Readable } from 'node:stream';
import { readJsonBody } from './body.js';
import { apolloRequestSpan, tracing } from '../observability/tracing.js';

/**
 * Apollo Server 5 on Koa, through Apollo's documented integration entry point
 * (`executeHTTPGraphQLRequest`). `@as-integrations/koa` does this too, but it declares Node >= 22;
 * this is its few lines, reading the body with the gateway's own limits (64 KiB, JSON only).
 */
export function apolloKoaMiddleware<TContext extends BaseContext>(
  server: ApolloServer<TContext>,
  context: ContextFunction<[KoaContext], TContext>,
): Middleware {
  return async (ctx) => {
    const headers = new HeaderMap();
    for (const [key, value] of Object.entries(ctx.headers)) {
      if (value !== undefined) headers.set(key, Array.isArray(value) ? value.join(', ') : value);
    }
    const body = ctx.method === 'POST' ? await readJsonBody(ctx) : undefined;
    const execute = () =>
      server.executeHTTPGraphQLRequest({
        httpGraphQLRequest: { method: ctx.method.toUpperCase(), headers, search: ctx.querystring, body },
        context: () => context(ctx),
      });
    // With tracing on, the operation is a span (named once Apollo has parsed it: src/graphql/apollo.ts).
    const response = tracing.on ? await apolloRequestSpan(execute) : await execute();
    for (const [key, value] of response.headers) ctx.set(key, value);
    ctx.status = response.status ?? 200;
    if (response.body.kind === 'complete') {
      ctx.body = response.body.string;
    } else {
      ctx.body = Readable.from(response.body.asyncIterator);
    }
  };
}
