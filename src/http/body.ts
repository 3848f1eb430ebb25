import getRawBody from 'raw-body';
import type { Context as KoaContext } from 'koa';
import { AppError } from '../errors.js';

/** Largest request body accepted, on every door (64 KiB). */
export const MAX_BODY_BYTES = 64 * 1024;

/**
 * Reads a JSON request body: 415 unless the content type is JSON, 413 over 64 KiB, 400 when it
 * does not parse. An empty body reads as undefined.
 */
export async function readJsonBody(ctx: KoaContext): Promise<unknown> {
  const length = ctx.request.length;
  const hasBody = (length !== undefined && length > 0) || ctx.get('transfer-encoding') !== '';
  if (!hasBody) return undefined;
  if (!ctx.is('application/json', '+json')) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json');
  }
  if (length !== undefined && length > MAX_BODY_BYTES) {
    throw new AppError('PAYLOAD_TOO_LARGE', `Request body must be at most ${MAX_BODY_BYTES} bytes`);
  }
  let text: string;
  try {
    text = await getRawBody(ctx.req, { limit: MAX_BODY_BYTES, encoding: 'utf8', length });
  } catch (err) {
    const type = (err as { type?: string }).type;
    if (type === 'entity.too.large') {
      throw new AppError('PAYLOAD_TOO_LARGE', `Request body must be at most ${MAX_BODY_BYTES} bytes`);
    }
    throw new AppError('BAD_USER_INPUT', 'Request body could not be read');
  }
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new AppError('BAD_USER_INPUT', 'Request body is not valid JSON');
  }
}
