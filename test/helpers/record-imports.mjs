/* global process, URL */
/**
 * Test-only, loaded with `node --import` before the gateway: records every `@opentelemetry/` package
 * the process resolves (statically or by dynamic import) in the file GATEWAY_TEST_IMPORTS names, so
 * that a test can check that tracing left off loads none of the SDK.
 */
import { register } from 'node:module';

register(new URL('./record-imports-hook.mjs', import.meta.url), { data: process.env.GATEWAY_TEST_IMPORTS });
