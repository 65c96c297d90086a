/**
 * Test-only clock hook for the chaos suite's clock-jump scenario, loaded into a worker child process with
 * `NODE_OPTIONS=--import <this file>`: on SIGUSR2 the process's wall clock (`Date.now`, which the service's
 * `now` and BullMQ's job timestamps and delays read) jumps by `CHAOS_CLOCK_JUMP_MS` (negative: backwards), as
 * an NTP step or a resumed virtual machine would make it. The monotonic clock (`performance.now`, timers) is
 * left alone, as a real jump leaves it. Nothing in `src/` knows about it.
 */
const jumpMs = Number(process.env.CHAOS_CLOCK_JUMP_MS ?? '600000');
let offsetMs = 0;
const realNow = Date.now.bind(Date);
Date.now = () => realNow() + offsetMs;
process.on('SIGUSR2', () => {
  offsetMs += jumpMs;
  process.stderr.write(`clock-offset: wall clock now off by ${offsetMs} ms\n`);
});
