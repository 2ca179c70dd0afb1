/**
 * The one shape of a pipeline stage, here with the request context so that every stage, and the
 * handler that runs them, may name it without pointing up at `pipeline.ts`.
 */
import type { RequestContext } from './context.js';

/** One step of the pipeline: answers at once, or returns a promise only when it really waits. */
export type Stage = (ctx: RequestContext) => void | Promise<void>;

/** Stages in the order they run, each with its name. */
export type Stages = ReadonlyArray<readonly [name: string, stage: Stage]>;
