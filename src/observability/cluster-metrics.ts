import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';

/**
 * /metrics with several workers (node:cluster): a scrape reaches one worker on the shared port, so
 * that worker asks the primary, which collects every listening worker's own registry over IPC and
 * sums it (prom-client's aggregation: counters and histograms add up, gauges as each metric says)
 * and sends the text back. The figures are the cluster's whatever worker answers. A worker that
 * restarts starts its counters from zero, which Prometheus reads as a counter reset.
 */

/** Worker → primary: "the aggregate, please". */
const REQUEST = 'wallet-gateway:metrics-request';
/** Primary → worker: "your registry, please" / worker → primary: the registry as JSON. */
const COLLECT = 'wallet-gateway:metrics-collect';
const PART = 'wallet-gateway:metrics-part';
/** Primary → worker: the aggregate (or why there is none). */
const AGGREGATE = 'wallet-gateway:metrics-aggregate';

/** How long the primary waits for the workers, and a worker for the primary. */
const TIMEOUT_MS = 4000;

interface Message {
  type?: unknown;
  id?: unknown;
  text?: unknown;
  error?: unknown;
  metrics?: unknown;
}

let nextId = 0;
const waiting = new Map<number, { resolve: (text: string) => void; reject: (err: Error) => void }>();
let workerListening = false;
let served: Registry | undefined;

/**
 * In a cluster worker: answers the primary's collection requests with `registry` (this worker's
 * own metrics) and receives the aggregates it asked for. Idempotent; does nothing outside a worker.
 */
export function serveWorkerMetrics(registry: Registry): void {
  if (!cluster.isWorker) return;
  served = registry;
  if (workerListening) return;
  workerListening = true;
  process.on('message', (message: Message) => {
    if (message?.type === COLLECT) {
      const registry = served;
      if (!registry) return;
      void registry.getMetricsAsJSON().then(
        (metrics) => toPrimary({ type: PART, id: message.id, metrics }),
        (err: Error) => toPrimary({ type: PART, id: message.id, error: err.message }),
      );
    } else if (message?.type === AGGREGATE && typeof message.id === 'number') {
      const pending = waiting.get(message.id);
      if (!pending) return;
      waiting.delete(message.id);
      if (typeof message.text === 'string') pending.resolve(message.text);
      else pending.reject(new Error(String(message.error ?? 'no aggregate')));
    }
  });
}

/** Whether /metrics should report the cluster's aggregate (this process is a cluster worker). */
export const inClusterWorker = (): boolean => cluster.isWorker && process.send !== undefined;

/** In a cluster worker: the metrics of every worker, summed by the primary. */
export function clusterMetrics(): Promise<string> {
  const id = nextId++;
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      waiting.delete(id);
      reject(new Error('the cluster primary did not answer'));
    }, TIMEOUT_MS + 1000);
    timer.unref();
    waiting.set(id, {
      resolve: (text) => {
        clearTimeout(timer);
        resolve(text);
      },
      reject: (err) => {
        clearTimeout(timer);
        reject(err);
      },
    });
    if (!toPrimary({ type: REQUEST, id })) {
      waiting.delete(id);
      clearTimeout(timer);
      reject(new Error('the cluster primary is gone'));
    }
  });
}

/**
 * A message to the primary, if it is still there. With a callback, a send that fails (the primary
 * died meanwhile: EPIPE, a closed channel) is an error of the send, not an 'error' event on the
 * process (which, unhandled, would end the worker with a stack trace).
 */
function toPrimary(message: object): boolean {
  if (!process.send || !process.connected) return false;
  try {
    return process.send(message, undefined, {}, () => undefined);
  } catch {
    return false;
  }
}

/**
 * In the primary: answers the workers' requests for the aggregate by collecting from `workers()`
 * (those that listen: a worker still starting has no registry to give), plus the primary's `own`
 * metrics if it has any. Fails the request when a worker does not answer in time
 * rather than answering with part of the cluster.
 */
export function aggregateWorkerMetrics(workers: () => Worker[], own?: Registry): void {
  let collection = 0;
  cluster.on('message', (asking: Worker, message: Message) => {
    if (message?.type !== REQUEST) return;
    const ask = collection++;
    const targets = workers().filter((w) => w.isConnected());
    const parts: object[] = [];
    let left = targets.length;
    const primaryPart = own?.getMetricsAsJSON();
    let settled = false;
    const answer = (reply: { text?: string; error?: string }): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      cluster.off('message', onPart);
      if (asking.isConnected()) asking.send({ type: AGGREGATE, id: message.id, ...reply }, () => undefined);
    };
    const onPart = (from: Worker, part: Message): void => {
      if (part?.type !== PART || part.id !== ask || !targets.includes(from)) return;
      if (typeof part.error === 'string' || !Array.isArray(part.metrics)) return answer({ error: String(part.error ?? 'bad part') });
      parts.push(part.metrics);
      if (--left === 0) {
        Promise.resolve(primaryPart)
          .then((mine) => AggregatorRegistry.aggregate(mine ? [...parts, mine] : parts).metrics())
          .then((text) => answer({ text }), (err: Error) => answer({ error: err.message }));
      }
    };
    const timer = setTimeout(() => answer({ error: 'a worker did not answer' }), TIMEOUT_MS);
    timer.unref();
    cluster.on('message', onPart);
    if (targets.length === 0) return answer({ text: '' });
    for (const w of targets) w.send({ type: COLLECT, id: ask }, () => undefined);
  });
}
