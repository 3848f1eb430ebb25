import { pino, type Logger } from 'pino';

/** Paths that may hold a credential; pino removes them before a line is written. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'headers.authorization',
  'authorization',
  'connectionParams.authorization',
  'secretKey',
  'token',
  'adminToken',
];

/** A quoted SQL literal, and a number standing alone in a statement. */
const SQL_LITERAL = /'(?:[^']|'')*'/g;
const SQL_NUMBER = /(?<![\w.$:])-?\d+(?:\.\d+)?(?![\w.:])/g;
/** "Key (id)=(…)" and similar details of PostgreSQL errors carry the row's values. */
const DETAIL_VALUES = /=\((?:[^()]|\([^()]*\))*\)/g;

/** The statement's shape: literals and numbers replaced by `?`. */
export function sqlShape(text: string): string {
  return text.replace(SQL_LITERAL, "'?'").replace(SQL_NUMBER, '?');
}

/** True for an error of the database driver or the ORM (their messages embed the statement with its values). */
function isDatabaseError(err: Record<string, unknown>): boolean {
  return (typeof err.code === 'string' && /^[0-9A-Z]{5}$/.test(err.code)) || 'sqlState' in err || /Exception$/.test(String(err.type ?? err.name ?? ''));
}

/**
 * pino's error serializer, except that database errors keep only the shape of their statement:
 * wallet ids, amounts, descriptions and keys inlined in SQL (message, stack, detail) never reach
 * the log.
 */
export function serializeError(e: Error): Record<string, unknown> {
  const out = pino.stdSerializers.err(e) as unknown as Record<string, unknown>;
  if (!isDatabaseError(out)) return out;
  for (const key of ['message', 'sql', 'query', 'sqlMessage', 'where', 'internalQuery']) {
    if (typeof out[key] === 'string') out[key] = sqlShape(out[key] as string);
  }
  if (typeof out.stack === 'string') {
    const lines = (out.stack as string).split('\n');
    const firstFrame = lines.findIndex((l) => /^\s+at /.test(l));
    const head = firstFrame < 0 ? lines : lines.slice(0, firstFrame);
    out.stack = [...head.map(sqlShape), ...(firstFrame < 0 ? [] : lines.slice(firstFrame))].join('\n');
  }
  if (typeof out.detail === 'string') out.detail = (out.detail as string).replace(DETAIL_VALUES, '=(?)');
  for (const key of ['parameters', 'params', 'bindings']) delete out[key];
  return out;
}

/** Structured JSON logs; credentials are redacted wherever they would appear. */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'wallet-gateway' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      serializers: { err: serializeError },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}
