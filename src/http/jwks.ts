import Router from '@koa/router';
import type { GatewayState } from './state.js';
import type { ConsentSigner } from '../consent/consent-keys.js';

/** How long a verifier may keep the key set (seconds); a rotation publishes the new key before it signs with it. */
export const JWKS_MAX_AGE_SECONDS = 300;

/**
 * GET /.well-known/jwks.json: the public keys consent receipts are signed with (the current one and
 * the previous ones still published), without authentication, cacheable by anyone.
 */
export function createJwksRouter(consent: ConsentSigner): Router<GatewayState> {
  const router = new Router<GatewayState>();
  router.get('/.well-known/jwks.json', async (ctx) => {
    ctx.state.route = 'GET /.well-known/jwks.json';
    const jwks = await consent.jwks();
    ctx.set('Cache-Control', `public, max-age=${JWKS_MAX_AGE_SECONDS}`);
    ctx.set('Access-Control-Allow-Origin', '*');
    ctx.type = 'application/json';
    ctx.body = jwks;
  });
  return router;
}
