/**
 * A writable store file made from sample data on first use: the embedded default keeps what it
 * writes (the SSO providers a PATCH changes) in an ignored folder, so the committed sample stays as
 * it is, and a fresh clone starts from it.
 */
import { constants } from 'node:fs';
import { copyFile, mkdir } from 'node:fs/promises';
import path from 'node:path';

/** Copies `seed` to `file` when `file` does not exist yet (its folder made as needed); never overwrites. */
export async function seedFile(seed: string, file: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  try {
    // COPYFILE_EXCL: a file already there (or one a concurrent start has just made) is kept.
    await copyFile(seed, file, constants.COPYFILE_EXCL);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
      throw new Error(`cannot make ${file} from ${seed}: ${(err as Error).message}`, { cause: err });
    }
  }
}
