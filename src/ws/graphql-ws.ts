import { RateLimitedError } from '../rate-limit.js';
import type http from 'node:http';
import { WebSocketServer } from 'ws';
import { useGraphqlWsServer, type WsExtra } from './use-ws.js';
import { CloseCode, type Context as WsContext } from 'graphql-ws';
import { GraphQLError, execute, specifiedRules, subscribe, validate, type ExecutionArgs, type GraphQLSchema, type ValidationRule } from 'graphql';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { createContext, type Context, type ContextDeps } from '../context.js';
import type { Services } from '../services.js';
import { AppError } from '../errors.js';
import { formatGraphQLError } from '../graphql/format-error.js';
import { MAX_BODY_BYTES } from '../http/body.js';
import { graphqlOperationSpan, SpanKind, tracing } from '../observability/tracing.js';
import { parseDocument } from '../graphql/document-limits.js';
import { ConnectionSlots } from './connection-slots.js';
import { costError, costLimitOf } from '../graphql/cost.js';

export interface GraphqlWsOptions {
  server: http.Server;
  schema: GraphQLSchema;
  config: Config;
  services: Services;
  /** What an operation's context is built from. */
  contexts: ContextDeps;
  logger: Logger;
  /** Depth and cost limits, added to GraphQL's own validation. */
  validationRules?: readonly ValidationRule[];
  /** Keep-alive ping interval; a socket that misses a pong is dropped. */
  keepAliveMs?: number;
}

export interface GraphqlWs {
  readonly wss: WebSocketServer;
  /** This instance's places in the per-user connection limit (held in the database for every instance). */
  readonly slots: ConnectionSlots;
  /** Closes every socket with 1001 (going away) and stops accepting new ones. */
  dispose(): Promise<void>;
}

interface ConnectionExtra extends Record<PropertyKey, unknown> {
  userId?: string;
  /** When the socket's user token expires (epoch ms). */
  expiresAt?: number;
}

type SocketContext = WsContext<Record<string, unknown> | undefined, WsExtra & Partial<ConnectionExtra>>;

/** Close code for a user over the per-user connection limit. */
export const TOO_MANY_CONNECTIONS = 4429;
/** Close code (RFC 6455 registry: Try Again Later) when the connection limit cannot be checked (database unreachable). */
export const TRY_AGAIN_LATER = 1013;
/** Close code (and reason) of a socket whose user token has expired: the token is no longer valid. */
export const TOKEN_EXPIRED = { code: CloseCode.Unauthorized, reason: 'Token expired' } as const;
/** Operations (subscriptions, or queries and mutations still running) open on one socket at most. */
export const MAX_OPERATIONS_PER_SOCKET = 20;
/** Operations open at most for one user across all of its sockets on this instance. */
export const MAX_OPERATIONS_PER_USER = 50;
/** Longest delay setTimeout accepts; a longer one fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Closes a socket when its token expires (re-armed for tokens valid longer than a timer can wait). */
function closeAtExpiry(socket: WsExtra['socket'], expiresAt: number): () => void {
  let timer: NodeJS.Timeout;
  const arm = (): void => {
    const wait = expiresAt - Date.now();
    if (wait <= 0) {
      socket.close(TOKEN_EXPIRED.code, TOKEN_EXPIRED.reason);
      return;
    }
    timer = setTimeout(arm, Math.min(wait, MAX_TIMER_MS));
  };
  arm();
  return () => clearTimeout(timer);
}

/** The same error without graphql-js's "Did you mean …?" (production has no introspection to reveal). */
function withoutSuggestions(error: GraphQLError): GraphQLError {
  const message = error.message.replace(/ ?Did you mean(.+?)\?$/, '');
  return message === error.message ? error : new GraphQLError(message, { nodes: error.nodes, extensions: error.extensions });
}

/**
 * With tracing on, each operation over the socket (a subscribe, an approve or reject, a query) is
 * a server span of its own: its resolvers and statements are its children.
 */
function tracedOperations(): { execute?: typeof execute; subscribe?: typeof subscribe } {
  if (!tracing.on) return {};
  const traced =
    <R>(run: (args: ExecutionArgs) => R) =>
    (args: ExecutionArgs) =>
      graphqlOperationSpan(args.document, args.operationName, 'websocket', async () => run(args), SpanKind.SERVER) as unknown as R;
  return { execute: traced(execute), subscribe: traced(subscribe) };
}

/** A coded GraphQL error refusing one operation (the socket stays open). */
const refused = (code: 'RATE_LIMITED' | 'UNAUTHENTICATED', message: string): readonly GraphQLError[] => [new AppError(code, message)];

/**
 * The WebSocket door: graphql-ws on the HTTP server's `/graphql`. The user token travels in
 * `connectionParams.authorization`; without a valid one the socket closes with 4401 before any
 * operation runs. Payloads are bounded (64 KiB) and idle sockets are pinged.
 */
export function attachGraphqlWs(opts: GraphqlWsOptions): GraphqlWs {
  const { server, schema, config, services, contexts, logger } = opts;
  const wss = new WebSocketServer({ server, path: '/graphql', maxPayload: MAX_BODY_BYTES });
  const rules = [...specifiedRules, ...(opts.validationRules ?? [])];
  const slots = new ConnectionSlots(services.forkEm, {
    maxPerUser: config.wsMaxConnectionsPerUser,
    leaseMs: config.wsConnectionLeaseSeconds * 1000,
    log: logger.child({ component: 'ws-connections' }),
  });
  slots.start();
  /** Each user's acknowledged sockets on this instance (their contexts hold the open operations). */
  const socketsPerUser = new Map<string, Set<SocketContext>>();
  const openOperations = (ctx: SocketContext): number => Object.keys(ctx.subscriptions).length;
  const disposable = useGraphqlWsServer<Record<string, unknown> | undefined, ConnectionExtra>(
    {
      schema,
      ...tracedOperations(),
      onConnect: async (ctx) => {
        const { socket } = ctx.extra;
        const header = ctx.connectionParams?.authorization;
        let claims: { userId: string; expiresAt: number };
        try {
          const principal = await services.auth.authenticate(typeof header === 'string' ? header : undefined, 'ws');
          if (principal.kind !== 'user' || principal.expiresAt === undefined) throw new Error('not a user');
          claims = { userId: principal.userId, expiresAt: principal.expiresAt };
        } catch {
          socket.close(CloseCode.Unauthorized, 'Unauthorized');
          return false;
        }
        // The socket may have been cut while the token was being verified: its close has already
        // run, so it must not be counted (it would never be uncounted).
        if (socket.readyState !== socket.OPEN) return false;
        // The limit holds across every process and instance on the database (SPEC §14).
        const tooMany = (): void => socket.close(TOO_MANY_CONNECTIONS, 'Too many connections');
        let slot;
        try {
          slot = await slots.claim(claims.userId, tooMany);
        } catch (err) {
          logger.warn({ err: { message: (err as Error).message } }, 'WebSocket connection limit could not be checked');
          socket.close(TRY_AGAIN_LATER, 'Try again later');
          return false;
        }
        if (!slot) {
          tooMany();
          return false;
        }
        // Cut while its place was being claimed: give the place back at once.
        if (socket.readyState !== socket.OPEN) {
          void slots.release(slot);
          return false;
        }
        const sockets = socketsPerUser.get(claims.userId) ?? new Set<SocketContext>();
        sockets.add(ctx);
        socketsPerUser.set(claims.userId, sockets);
        ctx.extra.userId = claims.userId;
        ctx.extra.expiresAt = claims.expiresAt;
        const stopTimer = closeAtExpiry(socket, claims.expiresAt);
        // Uncounted by the socket's own close event, registered while it is open: it always runs.
        socket.once('close', () => {
          stopTimer();
          void slots.release(slot);
          sockets.delete(ctx);
          if (sockets.size === 0 && socketsPerUser.get(claims.userId) === sockets) socketsPerUser.delete(claims.userId);
        });
        return true;
      },
      onSubscribe: async (ctx, _id, payload) => {
        const { userId, expiresAt } = ctx.extra;
        if (expiresAt !== undefined && Date.now() >= expiresAt) {
          ctx.extra.socket.close(TOKEN_EXPIRED.code, TOKEN_EXPIRED.reason);
          return refused('UNAUTHENTICATED', 'Access token expired');
        }
        // The operation being subscribed is already counted in ctx.subscriptions.
        if (openOperations(ctx) > MAX_OPERATIONS_PER_SOCKET) {
          return refused('RATE_LIMITED', `At most ${MAX_OPERATIONS_PER_SOCKET} operations may be open on one connection`);
        }
        if (userId) {
          let total = 0;
          for (const other of socketsPerUser.get(userId) ?? []) total += openOperations(other);
          if (total > MAX_OPERATIONS_PER_USER) {
            return refused('RATE_LIMITED', `At most ${MAX_OPERATIONS_PER_USER} operations may be open per user`);
          }
        }
        // Parsed (within the document limits) and validated here so that a syntax error is an
        // error message for this operation, not an exception that would close the whole socket.
        let document;
        try {
          document = parseDocument(payload.query);
        } catch (err) {
          return [err instanceof GraphQLError ? err : new GraphQLError('Syntax error')];
        }
        const errors = validate(schema, document, rules);
        if (errors.length > 0) return config.appEnv === 'production' ? errors.map(withoutSuggestions) : errors;
        const principal = userId ? ({ kind: 'user', userId } as const) : undefined;
        const tooCostly = costError(schema, document, payload.variables ?? undefined, payload.operationName ?? undefined, costLimitOf(config, principal));
        if (tooCostly) return [tooCostly];
        // The operation counts against its user's limit (USER_RATE_LIMIT_PER_SECOND), as over HTTP.
        if (userId) {
          try {
            await contexts.rateLimits.user(userId);
          } catch (err) {
            if (err instanceof RateLimitedError) return [err];
            throw err;
          }
        }
        return { schema, document, operationName: payload.operationName, variableValues: payload.variables };
      },
      // Counted against the user's limit at subscribe (an error there answers the operation; one
      // thrown by the context would close the socket).
      context: (ctx): Promise<Context> =>
        createContext(contexts, {
          principal: ctx.extra.userId ? { kind: 'user', userId: ctx.extra.userId } : { kind: 'anonymous' },
          logger,
          clientAddress: ctx.extra.request.socket.remoteAddress,
          counted: true,
        }),
      onError: (_ctx, _id, _payload, errors) => errors.map((e) => formatGraphQLError(e.toJSON(), e, logger)),
      onNext: (_ctx, _id, _payload, args, result) => {
        if (!('errors' in result) || !result.errors) return undefined;
        const log = (args.contextValue as Context | undefined)?.log ?? logger;
        // Sent as JSON: formatted errors serialise exactly like GraphQLError.toJSON() would.
        return { ...result, errors: result.errors.map((e) => formatGraphQLError(e.toJSON(), e, log)) } as unknown as typeof result;
      },
    },
    wss,
    logger,
    opts.keepAliveMs ?? 12_000,
  );
  return {
    wss,
    slots,
    async dispose() {
      await disposable.dispose();
      await slots.stop();
    },
  };
}
