'use strict';
// Cross-process hand-off of a shared bulkhead's only permit to a Node waiter
// (the Node row beside benches/benches/handoff.rs's Rust one): this process
// holds the permit, a child process queues for it and falls asleep, and the
// time runs from just before this process's release to the moment the child's
// call starts (process.hrtime: CLOCK_MONOTONIC, one clock for every process of
// the host). The child is woken by its native waker thread (a futex on the
// release counter), or, where there is none, by its 2 ms poll. p50 and p90 of
// `count` hand-offs; the target is p50 ≤ 100 µs.
//
//   node benches/node/handoff.js [count]   # alone; bench.js runs it too

const path = require('node:path');
const readline = require('node:readline');
const { spawn } = require('node:child_process');
const seawall = require(path.join(__dirname, '..', '..', 'bindings-node'));

const CHILD = 'SEAWALL_HANDOFF_CHILD';
const config = (name) => ({ shared: name, maxConcurrent: 1, maxQueue: 4 });

/** The child: for each "go" line, wait for the permit and print when the call started. */
function child(name) {
  const bulkhead = new seawall.Bulkhead(config(name));
  const lines = readline.createInterface({ input: process.stdin });
  lines.on('line', () => {
    bulkhead.execute(async () => process.stdout.write(`${process.hrtime.bigint()}\n`));
  });
}

/** Resolves once the shared bulkhead has a waiter. */
async function queued(bulkhead) {
  const until = performance.now() + 10_000;
  while (bulkhead.metrics().queued === 0) {
    if (performance.now() > until) throw new Error('the child never queued');
    await new Promise(setImmediate);
  }
}

/** The `pct`-th percentile (nearest rank below) of `v`, sorted in place. */
function percentile(v, pct) {
  v.sort((a, b) => a - b);
  return v[Math.floor(((v.length - 1) * pct) / 100)];
}

/** `count` hand-offs to a child process: `{ count, p50_ns, p90_ns }`. */
async function handoff(count) {
  const name = `bench-node-handoff-${process.pid}`;
  seawall.Bulkhead.unlinkShared(name);
  const bulkhead = new seawall.Bulkhead(config(name));
  const kid = spawn(process.execPath, [__filename], { env: { ...process.env, [CHILD]: name }, stdio: ['pipe', 'pipe', 'inherit'] });
  const answers = readline.createInterface({ input: kid.stdout })[Symbol.asyncIterator]();
  const lat = [];
  try {
    for (let i = 0; i < count; i += 1) {
      let release;
      const held = new Promise((r) => { release = r; });
      let holding;
      const got = new Promise((r) => { holding = r; });
      const call = bulkhead.execute(() => { holding(); return held; });
      await got; // the permit back from the child (its last call has ended)
      kid.stdin.write('go\n');
      await queued(bulkhead);
      // Let the child fall asleep, as a waiter of a quiet bulkhead has.
      await new Promise((r) => setTimeout(r, 1));
      const t0 = process.hrtime.bigint();
      release();
      await call;
      const { value, done } = await answers.next();
      if (done) throw new Error('the child ended');
      lat.push(Number(BigInt(value) - t0));
    }
  } finally {
    kid.stdin.end();
    kid.kill();
    seawall.Bulkhead.unlinkShared(name);
  }
  return { count, p50_ns: percentile(lat, 50), p90_ns: percentile(lat, 90) };
}

/** The report line, with the target met or missed. */
function describe(h) {
  const met = h.p50_ns <= 100_000 ? 'met' : 'MISSED';
  return `cross-process bulkhead hand-off (${h.count}): p50 ${(h.p50_ns / 1e3).toFixed(1)} µs, p90 ${(h.p90_ns / 1e3).toFixed(1)} µs — target p50 ≤ 100 µs: ${met}`;
}

if (require.main === module) {
  if (process.env[CHILD] !== undefined) {
    child(process.env[CHILD]);
  } else {
    handoff(Number(process.argv[2] || 300)).then((h) => console.log(describe(h)), (e) => {
      console.error(e);
      process.exitCode = 1;
    });
  }
}

module.exports = { handoff, describe };
