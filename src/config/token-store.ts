/**
 * `auth.signature.token_store` (contract §9): signed-request tokens kept in PostgreSQL, their keys
 * sealed under `encryption_key`. Apart from `schema.ts` so that the token store's keys sit in one place.
 */
import { z } from 'zod';
import { bool, duration, leaf } from './leaves.js';

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** An AES-256 key: exactly 32 bytes in standard padded base64 (`openssl rand -base64 32`). */
const encryptionKey = leaf(
  z
    .string()
    .refine(
      (s) => BASE64.test(s) && Buffer.from(s, 'base64').length === 32,
      'must be 32 bytes in standard base64 (openssl rand -base64 32)',
    ),
);

/** The token store's configuration; absent: tokens come from `auth.signature.tokens` only. */
export const tokenStoreSchema = z
  .strictObject({
    type: z.literal('postgres'),
    url: leaf(z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')),
    encryption_key: encryptionKey,
    // Keys of earlier rotations of encryption_key: rows sealed under them still open.
    previous_encryption_keys: z.array(encryptionKey).default([]),
    // The full re-read that backs up the notifications.
    poll: duration(24 * 3_600_000, 100).default(30_000),
    last_used_interval: duration(366 * 24 * 3_600_000, 1000).default(60_000),
    connect_timeout: duration(3_600_000, 1).default(5_000),
    migrate: bool().default(true),
  })
  .superRefine((c, ctx) => {
    const seen = [c.encryption_key];
    c.previous_encryption_keys.forEach((key, i) => {
      if (typeof key !== 'string') return;
      if (seen.includes(key)) {
        ctx.addIssue({
          code: 'custom',
          path: ['previous_encryption_keys', i],
          message: 'repeats encryption_key or an earlier entry',
        });
      }
      seen.push(key);
    });
  });

/** The validated token store configuration: durations in milliseconds. */
export type TokenStoreConfig = z.output<typeof tokenStoreSchema>;
