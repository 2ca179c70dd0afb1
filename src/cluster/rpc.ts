/**
 * The primary's questions to its workers over the cluster IPC channel: each worker's metrics (the
 * primary aggregates them on the one admin listener) and its readiness. prom-client's own
 * `clusterMetrics()` reads the global registry and fails a whole scrape when a worker exits mid-way;
 * this asks for exactly the app's registry and treats a worker that is gone as having nothing to say.
 */
import cluster, { type Worker } from 'node:cluster';
import type { WorkerMetrics } from '../observability/cluster-metrics.js';

/** What a worker answers with. */
export interface Answers {
  metrics(): Promise<WorkerMetrics>;
  ready(): boolean;
}

type Question = keyof Answers;
interface Ask {
  gateway: 'ask';
  id: number;
  question: Question;
}
interface Answer {
  gateway: 'answer';
  id: number;
  value?: unknown;
  error?: string;
}

/** In a worker: answers the primary's questions from `answers`. */
export function answerPrimary(answers: Answers): void {
  process.on('message', (msg: Partial<Ask>) => {
    if (msg?.gateway !== 'ask' || typeof msg.id !== 'number' || !(msg.question! in answers)) return;
    const id = msg.id;
    const question = msg.question as Question;
    Promise.resolve()
      .then((): unknown => answers[question]())
      .then(
        (value) => reply({ gateway: 'answer', id, value }),
        (err: Error) => reply({ gateway: 'answer', id, error: err.message }),
      );
  });
}

function reply(answer: Answer): void {
  // The primary may be gone (the worker then exits on its own): nothing to answer to.
  if (process.connected) process.send?.(answer);
}

/** In the primary: asks one worker at a time; `close()` stops listening to the workers. */
export interface Asker {
  /**
   * Resolves with the worker's answer, or `undefined` when the worker exits first; rejects when
   * the worker reports an error or does not answer within the timeout.
   */
  ask(worker: Worker, question: 'metrics'): Promise<WorkerMetrics | undefined>;
  ask(worker: Worker, question: 'ready'): Promise<boolean | undefined>;
  close(): void;
}

interface Pending {
  worker: Worker;
  settle(err: Error | undefined, value?: unknown): void;
}

/** Creates the primary's side of the questions; an answer later than `timeout` ms is an error. */
export function createAsker(timeout: number): Asker {
  let nextId = 0;
  const pending = new Map<number, Pending>();
  const onMessage = (_worker: Worker, msg: Partial<Answer>) => {
    if (msg?.gateway !== 'answer' || typeof msg.id !== 'number') return;
    const p = pending.get(msg.id);
    if (msg.error !== undefined) p?.settle(new Error(msg.error));
    else p?.settle(undefined, msg.value);
  };
  const onExit = (worker: Worker) => {
    for (const p of [...pending.values()]) if (p.worker === worker) p.settle(undefined, undefined);
  };
  cluster.on('message', onMessage);
  cluster.on('exit', onExit);
  return {
    ask(worker: Worker, question: Question): Promise<never> {
      const id = nextId++;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => p.settle(new Error(`worker ${worker.id} did not answer within ${timeout} ms`)),
          timeout,
        );
        const p: Pending = {
          worker,
          settle(err, value) {
            pending.delete(id);
            clearTimeout(timer);
            if (err) reject(err);
            else resolve(value as never);
          },
        };
        pending.set(id, p);
        const ask: Ask = { gateway: 'ask', id, question };
        // A closed channel means the worker is exiting: its `exit` settles the question.
        worker.send(ask, () => undefined);
      });
    },
    close() {
      cluster.off('message', onMessage);
      cluster.off('exit', onExit);
    },
  };
}
