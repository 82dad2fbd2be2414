#!/usr/bin/env node
'use strict';
// Per-call overhead of protecting a call, seawall next to its Node peers, in one
// run: `execute` on an already-resolved no-op through seawall's CircuitBreaker,
// opossum (default options, and timeout: false), cockatiel's circuit breaker and
// a bare `await`; then a retry + breaker + timeout pipeline, seawall's wrap()
// against cockatiel's wrap(retry, breaker, timeout); then the cost of a refusal
// (an open breaker's rejection, a full bulkhead's) next to opossum's and
// cockatiel's, the error caught. Contenders run interleaved
// in rounds and each keeps its median round, so drift hits all of them alike.
// Prints ns per call and the ratios; nothing here is a pass/fail test.
//
//   node benches/node/bench.js          # full run
//   node benches/node/bench.js --quick  # a few thousand calls (smoke test)
//   node benches/node/bench.js --json PATH  # also write the numbers and the
//                                            # peers' versions (benches/run's table)

const path = require('node:path');
const seawall = require(path.join(__dirname, '..', '..', 'bindings-node'));
const OpossumBreaker = require('opossum');
const cockatiel = require('cockatiel');

const quick = process.argv.includes('--quick');
const jsonAt = process.argv.indexOf('--json');
const jsonPath = jsonAt >= 0 ? process.argv[jsonAt + 1] : undefined;
const CALLS = quick ? 5_000 : 200_000;
const ROUNDS = quick ? 3 : 9;

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
    'seawall wrap(retry, breaker, timeout)': () => swPipeline.execute(noop),
    'cockatiel wrap(retry, breaker, timeout)': () => ckPipeline.execute(noop),
  };
}

async function round(fn) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) await fn();
  return Number(process.hrtime.bigint() - t0) / CALLS;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function main() {
  const c = { ...contenders(), ...(await refusers()) };
  const names = Object.keys(c);
  for (const n of names) await round(c[n]); // warm up every contender first
  const samples = Object.fromEntries(names.map((n) => [n, []]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const n of names) samples[n].push(await round(c[n]));
  }
  const ns = Object.fromEntries(names.map((n) => [n, median(samples[n])]));
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
  console.log(`  pipeline ÷ cockatiel wrap:             ${ratio('seawall wrap(retry, breaker, timeout)', 'cockatiel wrap(retry, breaker, timeout)')}`);
  console.log(`  open rejection ÷ opossum:              ${ratio('seawall open rejection', 'opossum open rejection')}`);
  console.log(`  open rejection ÷ cockatiel:            ${ratio('seawall open rejection', 'cockatiel open rejection')}`);
  console.log(`  bulkhead refusal ÷ opossum capacity:   ${ratio('seawall bulkhead refusal', 'opossum capacity refusal')}`);
  console.log(`  bulkhead refusal ÷ cockatiel:          ${ratio('seawall bulkhead refusal', 'cockatiel bulkhead refusal')}`);
  if (jsonPath) {
    const fs = require('node:fs');
    const version = (name) => JSON.parse(fs.readFileSync(path.join(__dirname, 'node_modules', name, 'package.json'), 'utf8')).version;
    const doc = {
      node: process.version, calls: CALLS, rounds: ROUNDS, ns_per_call: ns,
      versions: { seawall: require(path.join(__dirname, '..', '..', 'bindings-node', 'package.json')).version,
                  opossum: version('opossum'), cockatiel: version('cockatiel') },
    };
    fs.writeFileSync(jsonPath, JSON.stringify(doc, null, 2));
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
