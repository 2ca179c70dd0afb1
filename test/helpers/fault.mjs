/* global process */
/**
 * Test-only, loaded with `node --import` before the gateway (never by the gateway itself): on
 * SIGUSR2 it throws from a signal handler (an uncaught exception), or, when
 * GATEWAY_TEST_FAULT=rejection, leaves a rejected promise unhandled. The gateway's own code has no
 * fault hook; this is how a bug anywhere in the process would look to it.
 */
process.on('SIGUSR2', () => {
  if (process.env.GATEWAY_TEST_FAULT === 'rejection') {
    void Promise.reject(new Error('test fault: an unhandled rejection'));
    return;
  }
  throw new Error('test fault: an uncaught exception');
});
