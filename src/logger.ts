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

/** Structured JSON logs; credentials are redacted wherever they would appear. */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'wallet-gateway' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}
