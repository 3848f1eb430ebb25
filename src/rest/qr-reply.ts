import type { Context as KoaContext } from 'koa';
import { AppError } from '../errors.js';
import { qrPng, qrSvg } from '../links/qr-code.js';

/** The image types the QR route answers, in order of preference (no Accept, or any: SVG). */
export const QR_TYPES = ['image/svg+xml', 'image/png'] as const;

/**
 * The QR route's answer (GET /wallet/payment-request/{id}/qr): its operation selected the
 * request's `paymentUrl` (the service decided whose request it is); the door draws it as SVG, or
 * PNG when `Accept` prefers it. An `Accept` that allows neither is 406 with the Error body.
 */
export async function replyWithQrCode(ctx: KoaContext, value: unknown): Promise<void> {
  const url = (value as { paymentUrl: string }).paymentUrl;
  const type = ctx.accepts(...QR_TYPES);
  if (type === 'image/png') {
    ctx.type = 'image/png';
    ctx.body = await qrPng(url);
  } else if (type === 'image/svg+xml') {
    ctx.type = 'image/svg+xml';
    ctx.body = await qrSvg(url);
  } else {
    throw new AppError('NOT_ACCEPTABLE', `The QR code is served as ${QR_TYPES.join(' or ')}`);
  }
  ctx.set('Cache-Control', 'private, max-age=300');
  ctx.vary('Accept');
}
