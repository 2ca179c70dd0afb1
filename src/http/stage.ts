/**
 * The one shape of a pipeline stage and of the pipeline, here with the request context so that every
 * stage, and the handler that runs them, may name them without pointing up at `pipeline.ts`.
 */
import type { RequestContext } from './context.js';
import type { Route } from './route.js';

/** One step of the pipeline: answers at once, or returns a promise only when it really waits. */
export type Stage = (ctx: RequestContext) => void | Promise<void>;

/** Stages in the order they run, each with its name. */
export type Stages = ReadonlyArray<readonly [name: string, stage: Stage]>;

/**
 * The stages of one configuration, as the handler runs them: `route` first for every request, then
 * the stages of the route it found. A route's stages are its own: a public route's list has no
 * authentication in it, so that a route needing no credentials is configuration, not a special case.
 */
export interface Pipeline {
  /** Writes `ctx.route`, or throws the refusal (400, 301, 404, 405, 417). */
  route(ctx: RequestContext): void;
  /** The stages of `route`, in order. */
  stagesOf(route: Route): Stages;
}
