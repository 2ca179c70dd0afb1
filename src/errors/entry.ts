/**
 * The shape of one stable error code in the catalogue: what the gateway answers with it and what the
 * generated table (`docs/reference/error-codes.md`) says about it.
 */

/** One stable code. A released code never changes meaning: a new reason gets a new code. */
export interface CodeEntry {
  /** The HTTP status it is answered with (499: never answered, the client went away first). */
  readonly status: number;
  /** The envelope's message; `<…>` stands for the part that varies from request to request. */
  readonly message: string;
  /** The reason code that the log line and metrics already name for it, where they name one. */
  readonly label?: string;
  /** Why the gateway answers so, in a sentence. */
  readonly reason: string;
  /** What the client or the operator does about it, in a sentence. */
  readonly action: string;
}

/** A family of codes, by code. */
export type CodeFamily = Readonly<Record<string, CodeEntry>>;

/** The labels of a family's codes: what a factory is given to find its code. */
export type LabelOf<F extends CodeFamily> = {
  [K in keyof F]: F[K] extends { readonly label: infer L extends string } ? L : never;
}[keyof F];
