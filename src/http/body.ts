import getRawBody from 'raw-body';
import type { Context as KoaContext } from 'koa';
import { AppError } from '../errors.js';

/** Largest request body accepted, on every door (64 KiB). */
export const MAX_BODY_BYTES = 64 * 1024;

/** Deepest nesting of arrays and objects accepted in a JSON body or WebSocket message. */
export const MAX_JSON_DEPTH = 32;

/**
 * True when JSON text nests arrays/objects deeper than `max`. A linear scan of the text (strings
 * skipped), run before JSON.parse, so nothing recursive (the idempotency fingerprint, GraphQL
 * variable coercion) ever sees a document deep enough to overflow the stack.
 */
export function jsonTooDeep(text: string, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/**
 * Reads a JSON request body: 415 unless the content type is JSON, 413 over 64 KiB, 400 when it
 * nests deeper than MAX_JSON_DEPTH or does not parse. An empty body reads as undefined.
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
  if (jsonTooDeep(text)) throw new AppError('BAD_USER_INPUT', 'Request body is nested too deeply');
  try {
    return JSON.parse(text);
  } catch {
    throw new AppError('BAD_USER_INPUT', 'Request body is not valid JSON');
  }
}
