import { detachedFromTrace } from '../observability/tracing.js';

/**
 * A background pass that runs on a wake-up and every `intervalMs` (to cover a missed wake-up):
 * at most one pass runs at a time, a wake-up during a pass causes one more pass, and a pass that
 * says there is more to do (a full batch) is followed at once by another. Failures are reported
 * and the next interval tries again. The interval may be a function (read before each wait), and
 * polling may be turned off: the loop then runs on wake-ups only (a follower's webhook worker,
 * woken by its own commits, while the leader polls).
 */
export class PollLoop {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = true;
  private polling = true;

  constructor(
    /** One pass; resolves true when there is more to do right away. */
    private readonly pass: () => Promise<boolean>,
    private readonly intervalMs: number | (() => number),
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Starts the loop: a first pass now, or only after the interval; `poll: false` runs on wake-ups only. */
  start(opts: { now: boolean; poll?: boolean }): void {
    this.stopped = false;
    this.polling = opts.poll ?? true;
    if (opts.now) this.wake();
    else this.schedule();
  }

  /** Turns the interval's passes on or off (wake-ups run passes either way). */
  setPolling(on: boolean): void {
    this.polling = on;
    if (!on && this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    } else if (on && !this.running) {
      this.schedule();
    }
  }

  /** Something may be there: run a pass soon. */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    // A wake-up comes from a request's commit: the pass is not part of that request's trace.
    this.running = detachedFromTrace(() => this.loop());
  }

  /** Stops scheduling and waits for a pass in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  private schedule(): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.polling) return;
    this.timer = setTimeout(() => this.wake(), typeof this.intervalMs === 'number' ? this.intervalMs : this.intervalMs());
    this.timer.unref();
  }

  private async loop(): Promise<void> {
    try {
      do {
        this.again = false;
        if (await this.pass()) this.again = true;
      } while (this.again && !this.stopped);
    } catch (err) {
      this.onError(err);
    } finally {
      this.running = undefined;
      this.schedule();
    }
  }
}
