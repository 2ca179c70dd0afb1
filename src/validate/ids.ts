/** Path parameters that are 32-bit ids: decimal digits, 1 to 2147483647. */
import { errors } from '../errors.js';

const DIGITS = /^[0-9]{1,10}$/;
const MAX_ID = 2_147_483_647;

/** The id in path parameter `param`, or 400 `id is malformed` (context `path:<param>`). */
export function parseId(value: string | undefined, param: string): number {
  if (value === undefined || !DIGITS.test(value)) throw errors.idMalformed(param);
  const id = Number(value);
  if (id < 1 || id > MAX_ID) throw errors.idMalformed(param);
  return id;
}
