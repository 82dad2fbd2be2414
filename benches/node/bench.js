#!/usr/bin/env node
'use strict';
// Per-call overhead of protecting a call, seawall next to its Node peers, in one
// run: `execute` on an already-resolved no-op through seawall's CircuitBreaker,
// opossum (default options, and timeout: false), cockatiel's circuit breaker and
// a bare `await`; then a retry + breaker + timeout pipeline, seawall's wrap()
// against cockatiel's wrap(retry, breaker, timeout); an admitted call through a
// bulkhead with room (seawall's, cockatiel's); then the cost of a refusal
// (an open breaker's rejection, a full bulkhead's) next to opossum's and
// cockatiel's, the error caught; then an admitted call through a rate limiter,
// seawall's RateLimiter (execute, and the synchronous tryAcquire) against
// bottleneck in local mode (schedule); last, the hand-off of a shared
// bulkhead's permit to a waiter in another process (./handoff.js). Contenders run interleaved in rounds and
// each keeps its median round, so drift hits all of them alike.
// Prints ns per call and the ratios; nothing here is a pass/fail test.
//
//   node benches/node/bench.js          # full run
//   node benches/node/bench.js --quick  # a few thousand calls (smoke test)
//   node benches/node/bench.js --json PATH  # also write the numbers and the
//                                            # peers' versions (benches/run's table)

const path = require('node:path');
const seawall = require(path.join(__dirname, '..', '..', 'bindings-node'));
const OpossumBreaker = require('opossum');
const SeawallOpossum = require(path.join(__dirname, '..', '..', 'bindings-node', 'lib', 'opossum.js'));
const cockatiel = require('cockatiel');
const Bottleneck = require('bottleneck');
const { handoff: handoffBench, describe: describeHandoff } = require('./handoff');

const quick = process.argv.includes('--quick');
const jsonAt = process.argv.indexOf('--json');
const jsonPath = jsonAt >= 0 ? process.argv[jsonAt + 1] : undefined;
const CALLS = quick ? 5_000 : 200_000;
const ROUNDS = quick ? 3 : 9;
const LIMITER_CALLS = quick ? 2_000 : 20_000;
// bottleneck's local datastore yields to the event loop with setTimeout(0) as
// it registers and frees each job, so one awaited call takes milliseconds:
// fewer of them per round keep the run short.
const BOTTLENECK_CALLS = quick ? 20 : 300;
// Cross-process hand-offs of a shared bulkhead's permit (./handoff.js).
const HANDOFFS = quick ? 30 : 300;

const noop = () => Promise.resolve(1);
const never = () => new Promise(() => {});
const ignore = () => {};

/** Refusals: every breaker held open, every bulkhead full (one call held forever). */
async function refusers() {
  const swOpen = new seawall.CircuitBreaker({ name: 'bench-open', consecutiveFailures: 1, openDurationMs: 1e9 });
  await swOpen.execute(() => { throw new Error('down'); }).catch(ignore);
  const opOpen = new OpossumBreaker(noop, { timeout: false, resetTimeout: 1e9 });
  opOpen.open();
  const ckOpen = cockatiel.circuitBreaker(cockatiel.handleAll, {
    halfOpenAfter: 1e9, breaker: new cockatiel.ConsecutiveBreaker(1),
  });
  await ckOpen.execute(() => { throw new Error('down'); }).catch(ignore);
  const swFull = new seawall.Bulkhead({ maxConcurrent: 1 });
  swFull.execute(never);
  const opFull = new OpossumBreaker(never, { timeout: false, capacity: 1 });
  opFull.fire().catch(ignore);
  const ckFull = cockatiel.bulkhead(1, 0);
  ckFull.execute(never);
  return {
    'seawall open rejection': () => swOpen.execute(noop).catch(ignore),
    'opossum open rejection': () => opOpen.fire().catch(ignore),
    'cockatiel open rejection': () => ckOpen.execute(noop).catch(ignore),
    'seawall bulkhead refusal': () => swFull.execute(noop).catch(ignore),
    'opossum capacity refusal': () => opFull.fire().catch(ignore),
    'cockatiel bulkhead refusal': () => ckFull.execute(noop).catch(ignore),
  };
}

/** seawall/opossum: opossum's API on seawall's breaker, with opossum's defaults (10 s timeout). */
function opossumAdapter() {
  const soDefault = new SeawallOpossum(noop);
  const soNoTimeout = new SeawallOpossum(noop, { timeout: false });
  return {
    'seawall/opossum fire (default options)': () => soDefault.fire(),
    'seawall/opossum fire (timeout: false)': () => soNoTimeout.fire(),
  };
}

function contenders() {
  const sw = new seawall.CircuitBreaker({ name: 'bench' });
  const opDefault = new OpossumBreaker(noop);
  const opNoTimeout = new OpossumBreaker(noop, { timeout: false });
  const ck = cockatiel.circuitBreaker(cockatiel.handleAll, {
    halfOpenAfter: 30_000,
    breaker: new cockatiel.ConsecutiveBreaker(5),
  });
  const swPipeline = seawall.wrap(
    new seawall.Retry({ attempts: 3, backoff: { baseMs: 100 } }),
    new seawall.CircuitBreaker({ name: 'bench-pipeline' }),
    seawall.timeout(1000),
  );
  // A bulkhead with room: every call is admitted at once.
  const swBulkhead = new seawall.Bulkhead({ maxConcurrent: 10 });
  const ckBulkhead = cockatiel.bulkhead(10, 0);
  const ckPipeline = cockatiel.wrap(
    cockatiel.retry(cockatiel.handleAll, { maxAttempts: 2, backoff: new cockatiel.ExponentialBackoff() }),
    cockatiel.circuitBreaker(cockatiel.handleAll, { halfOpenAfter: 30_000, breaker: new cockatiel.ConsecutiveBreaker(5) }),
    cockatiel.timeout(1000, cockatiel.TimeoutStrategy.Aggressive),
  );
  return {
    'bare await': () => noop(),
    'seawall execute': () => sw.execute(noop),
    'opossum fire (default options)': () => opDefault.fire(),
    'opossum fire (timeout: false)': () => opNoTimeout.fire(),
    'cockatiel execute': () => ck.execute(noop),
    ...opossumAdapter(),
    'seawall wrap(retry, breaker, timeout)': () => swPipeline.execute(noop),
    'seawall bulkhead execute': () => swBulkhead.execute(noop),
    'cockatiel bulkhead execute': () => ckBulkhead.execute(noop),
    'cockatiel wrap(retry, breaker, timeout)': () => ckPipeline.execute(noop),
  };
}

/**
 * Rate limiters with the same quota, so every call is admitted: 10⁹ calls per
 * second in bursts of 2³² − 1 (seawall), a reservoir of 2⁵³ − 1 and no minTime
 * or concurrency cap (bottleneck, local datastore).
 */
function limiterContenders() {
  const sw = new seawall.RateLimiter({ rate: 1e9, perMs: 1000, burst: 2 ** 32 - 1 });
  const bn = new Bottleneck({ reservoir: Number.MAX_SAFE_INTEGER });
  return {
    'bare await': () => noop(),
    'seawall RateLimiter execute': () => sw.execute(noop),
    'seawall RateLimiter tryAcquire': () => sw.tryAcquire(),
    'bottleneck schedule (local)': () => bn.schedule(noop),
  };
}

async function round(fn, calls = CALLS) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) await fn();
  return Number(process.hrtime.bigint() - t0) / calls;
}

/**
 * Every contender's median round (ns per call), interleaved round by round;
 * `calls(name)` is how many calls a round of that contender makes.
 */
async function measure(c, calls) {
  const names = Object.keys(c);
  for (const n of names) await round(c[n], calls(n)); // warm up every contender first
  const samples = Object.fromEntries(names.map((n) => [n, []]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const n of names) samples[n].push(await round(c[n], calls(n)));
  }
  return Object.fromEntries(names.map((n) => [n, median(samples[n])]));
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function main() {
  const c = { ...contenders(), ...(await refusers()) };
  const names = Object.keys(c);
  const ns = await measure(c, () => CALLS);
  const bare = ns['bare await'];
  console.log(`node ${process.version}, ${CALLS} calls × ${ROUNDS} rounds, median round (ns per call; overhead = minus bare await)`);
  for (const n of names) {
    console.log(`  ${n.padEnd(42)} ${ns[n].toFixed(0).padStart(7)} ns   overhead ${(ns[n] - bare).toFixed(0).padStart(6)} ns`);
  }
  const ratio = (a, b) => `${(ns[a] / ns[b]).toFixed(3)} per call, ${((ns[a] - bare) / (ns[b] - bare)).toFixed(3)} of the overhead`;
  console.log('ratios (below 1: seawall is cheaper)');
  console.log(`  seawall ÷ opossum (default options):   ${ratio('seawall execute', 'opossum fire (default options)')}`);
  console.log(`  seawall ÷ opossum (timeout: false):    ${ratio('seawall execute', 'opossum fire (timeout: false)')}`);
  console.log(`  seawall ÷ cockatiel:                   ${ratio('seawall execute', 'cockatiel execute')}`);
  console.log(`  seawall/opossum ÷ opossum (default):   ${ratio('seawall/opossum fire (default options)', 'opossum fire (default options)')}`);
  console.log(`  seawall/opossum ÷ opossum (no timeout):${ratio('seawall/opossum fire (timeout: false)', 'opossum fire (timeout: false)')}`);
  const adapterCheaper = (ns['opossum fire (default options)'] - bare) / (ns['seawall/opossum fire (default options)'] - bare);
  console.log(`  opossum ÷ seawall/opossum fire() overhead, default options: ${adapterCheaper.toFixed(1)}× — target ≥ 3×: ${adapterCheaper >= 3 ? 'met' : 'MISSED'}`);
  console.log(`  pipeline ÷ cockatiel wrap:             ${ratio('seawall wrap(retry, breaker, timeout)', 'cockatiel wrap(retry, breaker, timeout)')}`);
  console.log(`  bulkhead ÷ cockatiel bulkhead:         ${ratio('seawall bulkhead execute', 'cockatiel bulkhead execute')}`);
  console.log(`  open rejection ÷ opossum:              ${ratio('seawall open rejection', 'opossum open rejection')}`);
  console.log(`  open rejection ÷ cockatiel:            ${ratio('seawall open rejection', 'cockatiel open rejection')}`);
  console.log(`  bulkhead refusal ÷ opossum capacity:   ${ratio('seawall bulkhead refusal', 'opossum capacity refusal')}`);
  console.log(`  bulkhead refusal ÷ cockatiel:          ${ratio('seawall bulkhead refusal', 'cockatiel bulkhead refusal')}`);
  const limiterCalls = (n) => (n.startsWith('bottleneck') ? BOTTLENECK_CALLS : LIMITER_CALLS);
  const rl = await measure(limiterContenders(), limiterCalls);
  console.log(`rate limiter, an admitted call (${LIMITER_CALLS} calls, bottleneck ${BOTTLENECK_CALLS}, × ${ROUNDS} rounds, median round)`);
  for (const [n, v] of Object.entries(rl)) console.log(`  ${n.padEnd(42)} ${v.toFixed(0).padStart(7)} ns`);
  const cheaper = rl['bottleneck schedule (local)'] / rl['seawall RateLimiter execute'];
  console.log(`  bottleneck ÷ seawall execute: ${cheaper.toFixed(1)}× per call — target ≥ 5×: ${cheaper >= 5 ? 'met' : 'MISSED'}`);
  const handoff = await handoffBench(HANDOFFS);
  console.log(`shared bulkhead, ${describeHandoff(handoff)}`);
  if (jsonPath) {
    const fs = require('node:fs');
    const version = (name) => JSON.parse(fs.readFileSync(path.join(__dirname, 'node_modules', name, 'package.json'), 'utf8')).version;
    const doc = {
      node: process.version, calls: CALLS, rounds: ROUNDS, ns_per_call: ns,
      rate_limiter: { calls: LIMITER_CALLS, bottleneck_calls: BOTTLENECK_CALLS, ns_per_call: rl },
      handoff,
      versions: { seawall: require(path.join(__dirname, '..', '..', 'bindings-node', 'package.json')).version,
                  opossum: version('opossum'), cockatiel: version('cockatiel'), bottleneck: version('bottleneck') },
    };
    fs.writeFileSync(jsonPath, JSON.stringify(doc, null, 2));
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
