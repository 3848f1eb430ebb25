import type http from 'node:http';
import { randomUUID } from 'node:crypto';
import { WebSocketServer } from 'ws';
import { useGraphqlWsServer } from './use-ws.js';
import { CloseCode } from 'graphql-ws';
import type { EntityManager } from '@mikro-orm/postgresql';
import { specifiedRules, validate, type GraphQLSchema, type ValidationRule } from 'graphql';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Context, Services } from '../context.js';
import { bearerToken } from '../auth/authenticate.js';
import { verifyUserToken } from '../auth/user-tokens.js';
import { formatGraphQLError } from '../format-error.js';
import { MAX_BODY_BYTES } from '../http/body.js';

export interface GraphqlWsOptions {
  server: http.Server;
  schema: GraphQLSchema;
  config: Config;
  services: Services;
  logger: Logger;
  forkEm: () => EntityManager;
  /** Depth and cost limits, added to GraphQL's own validation. */
  validationRules?: readonly ValidationRule[];
  /** Keep-alive ping interval; a socket that misses a pong is dropped. */
  keepAliveMs?: number;
}

export interface GraphqlWs {
  readonly wss: WebSocketServer;
  /** Closes every socket with 1001 (going away) and stops accepting new ones. */
  dispose(): Promise<void>;
}

interface ConnectionExtra extends Record<PropertyKey, unknown> {
  userId?: string;
}

/** Close code for a user over the per-user connection limit. */
export const TOO_MANY_CONNECTIONS = 4429;

/**
 * The WebSocket door: graphql-ws on the HTTP server's `/graphql`. The user token travels in
 * `connectionParams.authorization`; without a valid one the socket closes with 4401 before any
 * operation runs. Payloads are bounded (64 KiB) and idle sockets are pinged.
 */
export function attachGraphqlWs(opts: GraphqlWsOptions): GraphqlWs {
  const { server, schema, config, services, logger } = opts;
  const wss = new WebSocketServer({ server, path: '/graphql', maxPayload: MAX_BODY_BYTES });
  const rules = [...specifiedRules, ...(opts.validationRules ?? [])];
  const connectionsPerUser = new Map<string, number>();
  const disposable = useGraphqlWsServer<Record<string, unknown> | undefined, ConnectionExtra>(
    {
      schema,
      onConnect: async (ctx) => {
        const header = ctx.connectionParams?.authorization;
        const token = typeof header === 'string' ? bearerToken(header) : undefined;
        try {
          if (!token) throw new Error('missing token');
          ctx.extra.userId = await verifyUserToken(config, token);
        } catch {
          ctx.extra.socket.close(CloseCode.Unauthorized, 'Unauthorized');
          return false;
        }
        const userId = ctx.extra.userId;
        const open = connectionsPerUser.get(userId) ?? 0;
        if (open >= config.wsMaxConnectionsPerUser) {
          delete ctx.extra.userId;
          ctx.extra.socket.close(TOO_MANY_CONNECTIONS, 'Too many connections');
          return false;
        }
        connectionsPerUser.set(userId, open + 1);
        return true;
      },
      onDisconnect: (ctx) => {
        const userId = ctx.extra.userId;
        if (!userId) return;
        const left = (connectionsPerUser.get(userId) ?? 1) - 1;
        if (left <= 0) connectionsPerUser.delete(userId);
        else connectionsPerUser.set(userId, left);
      },
      validate: (schema, document) => validate(schema, document, rules),
      context: (ctx): Context => {
        const requestId = randomUUID();
        return {
          principal: ctx.extra.userId ? { kind: 'user', userId: ctx.extra.userId } : { kind: 'anonymous' },
          em: opts.forkEm(),
          services,
          requestId,
          log: logger.child({ requestId }),
        };
      },
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
    async dispose() {
      await disposable.dispose();
    },
  };
}
