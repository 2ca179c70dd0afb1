/**
 * A target's own CPU time, read from /proc: user + system time of every process of its process
 * group (the bench starts each target detached, so a gateway's cluster workers, its primary, or
 * nginx's master and worker all belong to it), all threads included. This is what a user pays per
 * core whatever else the machine is doing, unlike req/s, which mixes in the load generator and the
 * upstream sharing the same cores.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's times (`getconf CLK_TCK`, 100 on Linux almost always). */
const TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** Whether this machine has /proc to read CPU times from. */
export function cpuAvailable() {
  try {
    readFileSync('/proc/self/stat', 'utf8');
    return true;
  } catch {
    return false;
  }
}

/** utime and stime (fields 14 and 15) and pgrp (field 5) of /proc/<pid>/stat; undefined once gone. */
function statOf(pid) {
  let text;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces: split after its last `)`.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { pgrp: Number(fields[2]), user: Number(fields[11]), system: Number(fields[12]) };
}

/** Bytes written so far by `pid` through system calls (`wchar` of /proc/<pid>/io); 0 once gone. */
function writtenBy(pid) {
  try {
    return Number(/^wchar: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/**
 * Each live process of group `pgid` by pid: its CPU seconds so far (`user`, `system`) and the bytes
 * it wrote (`wchar`). A gateway's workers write the same bytes per request (the answer, the upstream
 * request, the log line), so their shares of the bytes written are their shares of the requests.
 */
export function groupProcesses(pgid) {
  const out = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = statOf(Number(name));
    if (stat && stat.pgrp === pgid) {
      out.set(Number(name), { user: stat.user / TICKS, system: stat.system / TICKS, wchar: writtenBy(name) });
    }
  }
  return out;
}

/**
 * Seconds of CPU used so far by every live process of process group `pgid`: `user` (the process's
 * own code: JavaScript, V8, libuv) and `system` (the kernel working for it: socket reads and writes,
 * the log file).
 */
export function groupCpuTimes(pgid) {
  let user = 0;
  let system = 0;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = statOf(Number(name));
    if (stat && stat.pgrp === pgid) {
      user += stat.user;
      system += stat.system;
    }
  }
  return { user: user / TICKS, system: system / TICKS };
}
