import type { Logger } from 'pino';
import type { Leadership } from './leadership.js';

/** A piece of background work that runs on the leader only. */
export interface LeaderTask {
  /** For the logs. */
  readonly name: string;
  start(): void | Promise<void>;
  /** Stops and waits for a pass under way; `start` may be called again afterwards. */
  stop(): Promise<void>;
}

/**
 * Runs `tasks` while this instance is the leader: started (in order) when it is elected, stopped
 * (together) when it stops being the leader, and again on the next election. Changes are applied
 * one after another, so a task is never started while its stop is still under way. Followers run
 * none of it.
 */
export class LeaderWork {
  private chain: Promise<void> = Promise.resolve();
  private running = false;

  constructor(
    leadership: Leadership,
    private readonly tasks: readonly LeaderTask[],
    private readonly log: Logger,
  ) {
    leadership.onChange((leader) => this.apply(leader));
  }

  /** Whether the tasks run here now. */
  get active(): boolean {
    return this.running;
  }

  private apply(leader: boolean): Promise<void> {
    this.chain = this.chain.then(async () => {
      if (leader === this.running) return;
      this.running = leader;
      if (leader) {
        for (const task of this.tasks) {
          try {
            await task.start();
          } catch (err) {
            this.log.error({ err: { message: (err as Error).message }, task: task.name }, 'leader task failed to start');
          }
        }
      } else {
        await Promise.all(
          this.tasks.map((task) =>
            task.stop().catch((err: unknown) => this.log.error({ err: { message: (err as Error).message }, task: task.name }, 'leader task failed to stop')),
          ),
        );
      }
    });
    return this.chain;
  }

  /** Stops the tasks (the gateway's drain); the leadership itself is closed by its owner. */
  stop(): Promise<void> {
    return this.apply(false);
  }
}
