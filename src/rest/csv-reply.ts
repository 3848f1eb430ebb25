import { Readable } from 'node:stream';
import type { Context as KoaContext } from 'koa';
import type { Context } from '../context.js';
import { AppError } from '../errors.js';
import type { ReplyDeps } from './routes.js';

/**
 * The payout report route's answer (GET /payouts/{payoutId}/report): its operation selected the
 * payout (the service decided whose it is); the door streams the report as `text/csv` (RFC 4180,
 * with its header line) a page of rows at a time, so memory stays flat whatever the payout's size
 * and a slow reader holds no database connection. An `Accept` that does not allow `text/csv` is
 * 406 with the Error body. A failure after the first bytes cannot become an Error body any more:
 * the connection is cut, so the reader sees an incomplete response, never a short report.
 */
export async function replyWithPayoutReport(ctx: KoaContext, value: unknown, context: Context, deps: ReplyDeps): Promise<void> {
  const { id } = value as { id: string };
  if (!ctx.accepts('text/csv')) throw new AppError('NOT_ACCEPTABLE', 'The payout report is served as text/csv');
  if (context.principal.kind !== 'developer') throw new AppError('FORBIDDEN', 'This operation needs a secret key');
  const lines = await deps.reports.reportLines(context.work, context.principal.developerId, id);
  const body = Readable.from(lines, { objectMode: false });
  body.once('error', (err: Error) => {
    context.log.error({ err: { message: err.message }, payoutId: id }, 'payout report stream failed; connection cut');
    ctx.res.destroy();
  });
  ctx.type = 'text/csv; charset=utf-8; header=present';
  ctx.set('Content-Disposition', `attachment; filename="payout-${id}.csv"`);
  ctx.set('Cache-Control', 'private, no-store');
  ctx.body = body;
}
