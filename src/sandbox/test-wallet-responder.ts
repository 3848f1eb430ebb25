import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { AppError } from '../errors.js';
import type { Services } from '../services.js';
import { PaymentRequest, PaymentRequestStatus } from '../payment-requests/payment-request.entity.js';
import { ANSWERING_OUTCOMES, type TestWallet } from './test-wallets.js';
import type { OutboxPayload } from '../events/events.js';

/** Errors a test wallet's answer may meet without anything being wrong. */
const EXPECTED_CODES: ReadonlySet<string> = new Set([
  // Another instance (or a person using the wallet's token) answered first.
  'PAYMENT_REQUEST_NOT_PENDING',
  'PAYMENT_REQUEST_EXPIRED',
]);

/**
 * Makes the test wallets answer: each payment request created for one of them is approved or
 * rejected `delayMs` after its creation, through the same PaymentRequestService calls (and
 * therefore the same state machine, events and webhooks) as a person's answer in the app.
 *
 * Requests arrive through this instance's EventHub (as they would reach the app), plus a
 * catch-up at start for requests still pending (created while no leader answered). It runs on the
 * elected leader only (src/sandbox/sandbox.ts); should two answer one request anyway (a leader
 * handing over), the state machine lets exactly one answer win, the other meets
 * PAYMENT_REQUEST_NOT_PENDING, which is expected and logged at debug level only.
 */
export class TestWalletResponder {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly inflight = new Set<Promise<void>>();
  private readonly iterators: Array<AsyncIterator<OutboxPayload>> = [];
  private stopped = false;

  constructor(
    private readonly services: Pick<Services, 'payments' | 'eventHub' | 'works'>,
    private readonly forkEm: () => EntityManager,
    private readonly log: Logger,
    private readonly delayMs: number,
  ) {}

  /** Subscribes to the answering wallets' new requests, then schedules the ones already pending. */
  async start(wallets: readonly TestWallet[]): Promise<void> {
    const answering = wallets.filter((w) => ANSWERING_OUTCOMES.has(w.outcome));
    for (const wallet of answering) this.listen(wallet);
    if (answering.length === 0) return;
    const pending = await this.forkEm().find(PaymentRequest, {
      walletId: { $in: answering.map((w) => w.walletId) },
      status: PaymentRequestStatus.PENDING,
      expiresAt: { $gt: new Date() },
    });
    for (const pr of pending) this.schedule(answering.find((w) => w.walletId === pr.walletId)!, pr);
  }

  private listen(wallet: TestWallet): void {
    const iterator = this.services.eventHub.subscribe('paymentRequested', wallet.userId);
    this.iterators.push(iterator);
    void (async () => {
      for (;;) {
        const next = await iterator.next();
        if (next.done || this.stopped) return;
        const created = next.value.data.paymentRequest as { id: string; createdAt: string };
        this.schedule(wallet, { id: created.id, createdAt: new Date(created.createdAt) });
      }
    })().catch((err: unknown) => this.log.error({ err, username: wallet.username }, 'test wallet stopped listening'));
  }

  /** Answers `pr` `delayMs` after it was created (at once for an older one); once per request and instance. */
  private schedule(wallet: TestWallet, pr: { id: string; createdAt: Date }): void {
    if (this.stopped || this.timers.has(pr.id)) return;
    const wait = Math.max(0, pr.createdAt.getTime() + this.delayMs - Date.now());
    const timer = setTimeout(() => {
      const work = this.answer(wallet, pr.id).finally(() => {
        this.timers.delete(pr.id);
        this.inflight.delete(work);
      });
      this.inflight.add(work);
    }, wait);
    this.timers.set(pr.id, timer);
  }

  private async answer(wallet: TestWallet, id: string): Promise<void> {
    const log = this.log.child({ testWallet: wallet.username, paymentRequestId: id });
    try {
      if (wallet.outcome === 'reject') await this.services.payments.reject(this.services.works.begin(), wallet.userId, id);
      // Verified with the wallet's PIN, like a person's approval in the app.
      else await this.services.payments.approve(this.services.works.begin(), wallet.userId, id, { pin: wallet.pin });
      log.info({ outcome: wallet.outcome }, 'test wallet answered');
    } catch (err) {
      if (err instanceof AppError && err.code === 'INSUFFICIENT_FUNDS' && wallet.outcome === 'insufficient_funds') {
        log.info('test wallet could not pay (insufficient funds, as scripted); the request stays pending');
      } else if (err instanceof AppError && EXPECTED_CODES.has(err.code)) {
        log.debug({ code: err.code }, 'test wallet answer lost (already decided)');
      } else {
        log.error({ err }, 'test wallet answer failed');
      }
    }
  }

  /** Stops listening, cancels the answers not yet due and waits for those under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    await Promise.all(this.iterators.map((it) => it.return?.()));
    await Promise.all([...this.inflight]);
  }
}
