/* global process */
/**
 * Test-only, loaded with `node --import` before the gateway (never by the gateway itself): the
 * gateway ends with the test process that spawned it, however that one ends (a timeout's SIGALRM, a
 * SIGKILL), where no teardown or exit handler of the test runs. The test process holds the other end
 * of the gateway's stdin, which therefore reaches its end once the test process is gone. Cluster
 * workers inherit both this module and that stdin. Unreferenced: the gateway still exits by itself.
 */
const end = () => process.kill(process.pid, 'SIGKILL');
process.stdin.on('end', end);
process.stdin.on('error', end);
process.stdin.resume();
process.stdin.unref();
