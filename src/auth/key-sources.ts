/**
 * What each key source (one identity provider's key set) has learnt, kept by the app across reloads:
 * a SIGHUP whose key source is unchanged starts from the last good keys and the same unknown-`kid`
 * cooldown, so a reload while the identity provider is down never leaves the gateway without keys.
 */
import type { LoadedKey } from './jwk-set.js';

/** The shared, mutable state of one key source; written only by its key managers. */
export interface KeySourceState {
  /** The last good keys; undefined until a key set has loaded once. */
  keys: readonly LoadedKey[] | undefined;
  /** The fingerprints of `keys`, for the verified-JWT cache. */
  fingerprints: ReadonlySet<string>;
  /** The key set's URL that discovery found (discovery sources only). */
  jwksUri: string | undefined;
  /** When (the manager's clock, ms) the last fetch caused by an unknown `kid` started. */
  lastKidFetch: number;
  /** Why the last fetch failed (a fixed text), until one succeeds: what `/readyz` shows. */
  problem: string | undefined;
}

/** A state with nothing learnt yet. */
export function newKeySourceState(): KeySourceState {
  return {
    keys: undefined,
    fingerprints: new Set(),
    jwksUri: undefined,
    lastKidFetch: Number.NEGATIVE_INFINITY,
    problem: undefined,
  };
}

/** Every key source's state by its identity (where its keys come from, and for which algorithms). */
export class KeySources {
  readonly #states = new Map<string, KeySourceState>();
  /** Requests waiting for a cooldown to end, over every identity provider of the app instance. */
  readonly waiters = { count: 0 };

  /** The state of source `id`: the one kept from an earlier configuration, or a new one. */
  state(id: string): KeySourceState {
    let state = this.#states.get(id);
    if (state === undefined) {
      state = newKeySourceState();
      this.#states.set(id, state);
    }
    return state;
  }

  /** Forgets every source but `ids` (those of the configuration now in force). */
  retain(ids: Iterable<string>): void {
    const keep = new Set(ids);
    for (const id of this.#states.keys()) if (!keep.has(id)) this.#states.delete(id);
  }
}
