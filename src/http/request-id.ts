/**
 * Request ids (`RequestID`): random (version 4) UUIDs, as `crypto.randomUUID` makes them, from the
 * same kind of buffered entropy (`randomFillSync`, a batch at a time), written as text a batch at a
 * time, each id then a slice of the batch's one string. `randomUUID` builds its text by joining
 * twenty short strings, and every later use of that string (the header line, its validation, the log
 * line) pays for the join.
 */
import { randomFillSync } from 'node:crypto';

/** Ids made per batch (2 KiB of entropy, as `randomUUID`'s own cache). */
const BATCH = 128;
/** `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`: 36 characters. */
const LENGTH = 36;
const HEX = Buffer.from('0123456789abcdef', 'latin1');

export class RequestIds {
  readonly #random = Buffer.alloc(BATCH * 16);
  readonly #text = Buffer.alloc(BATCH * LENGTH);
  /** The batch's ids as one string, read out by `slice` (no call into the runtime per id). */
  #batch = '';
  #next = BATCH;

  /** A new random UUID (version 4, RFC 9562), lower-case. */
  next(): string {
    if (this.#next === BATCH) this.#fill();
    const start = this.#next * LENGTH;
    this.#next++;
    return this.#batch.slice(start, start + LENGTH);
  }

  #fill(): void {
    const random = randomFillSync(this.#random);
    const text = this.#text;
    let at = 0;
    for (let id = 0; id < BATCH; id++) {
      const bytes = id * 16;
      // The version (4) in the high nibble of byte 6, the variant (10xx) in the high bits of byte 8.
      random[bytes + 6] = ((random[bytes + 6] as number) & 0x0f) | 0x40;
      random[bytes + 8] = ((random[bytes + 8] as number) & 0x3f) | 0x80;
      for (let i = 0; i < 16; i++) {
        if (i === 4 || i === 6 || i === 8 || i === 10) text[at++] = 0x2d; // '-'
        const byte = random[bytes + i] as number;
        text[at++] = HEX[byte >> 4] as number;
        text[at++] = HEX[byte & 0x0f] as number;
      }
    }
    this.#batch = text.toString('latin1');
    this.#next = 0;
  }
}
