// Self-hosted GraphiQL for GET /graphql in development (replaces Apollo's CDN-loaded landing
// page). Bundled by src/sandbox/build-web.mjs into dist/web/graphiql.js with its stylesheet.
// Queries and mutations go over HTTP with the headers of the header editor; subscriptions go over
// graphql-ws, with the editor's Authorization header sent as connectionParams.authorization.
import { createElement } from 'react';
import { createRoot } from 'react-dom/client';
import { GraphiQL } from 'graphiql';
import { createGraphiQLFetcher } from '@graphiql/toolkit';
import { createClient } from 'graphql-ws';
import 'graphiql/style.css';
import './graphiql-page.css';

const url = `${location.origin}/graphql`;
const wsUrl = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/graphql`;

/** One graphql-ws client per Authorization value (the socket authenticates once, at connection). */
const wsClients = new Map();
function wsClientFor(authorization) {
  const key = authorization ?? '';
  let client = wsClients.get(key);
  if (!client) {
    client = createClient({ url: wsUrl, connectionParams: authorization ? { authorization } : {}, lazy: true, retryAttempts: 0 });
    wsClients.set(key, client);
  }
  return client;
}

function authorizationOf(headers) {
  if (!headers || typeof headers !== 'object') return undefined;
  for (const [name, value] of Object.entries(headers)) {
    if (name.toLowerCase() === 'authorization' && typeof value === 'string') return value;
  }
  return undefined;
}

const fetcher = (params, opts) =>
  createGraphiQLFetcher({ url, wsClient: wsClientFor(authorizationOf(opts?.headers)) })(params, opts);

// The starter text: every line at most 52 columns, so the editor pane shows it whole at 1280 px
// (it is about 56 columns wide there; longer lines were cut off at the pane's right edge).
const DEFAULT_QUERY = `# The wallet gateway's GraphQL API (development).
#
# Paste a credential into the Headers tab below:
#   { "Authorization": "Bearer <credential>" }
# where <credential> is a user token, an sk_test_
# secret key or the admin token. A user token:
#   npx wallet-gateway user:token --username alice
#
# Subscriptions (user token) run over graphql-ws:
#   subscription { paymentRequested {
#     id amount currency merchantName expiresAt } }

query MyWallet {
  myWallet {
    walletId username balance currency status
  }
  myPendingPaymentRequests {
    id amount currency description
    merchantName expiresAt
  }
}
`;

createRoot(document.getElementById('graphiql')).render(
  createElement(GraphiQL, {
    fetcher,
    defaultQuery: DEFAULT_QUERY,
    defaultHeaders: '{\n  "Authorization": "Bearer "\n}',
    isHeadersEditorEnabled: true,
    shouldPersistHeaders: false,
    defaultEditorToolsVisibility: 'headers',
  }),
);
