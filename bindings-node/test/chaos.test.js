'use strict';
// Chaos (DESIGN §11): rules, seeded draws, faults seen by the policies around
// it, cancellation, the rules file, metrics.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const {
  chaos, wrap, timeout, CircuitBreaker, isSeawallError, registerMetrics, loadChaosRules,
} = require('..');
const { SplitMix64 } = require('../lib/splitmix');
const { rejection, delay } = require('./helpers');

// SplitMix64 written from the paper (Steele, Lea & Flood 2014) with
// BigInt.asUintN, apart from lib/splitmix.js: the reference the draws are
// checked against.
function reference(seed) {
  let s = BigInt(seed);
  return () => {
    s = BigInt.asUintN(64, s + 0x9e3779b97f4a7c15n);
    let z = s;
    z = BigInt.asUintN(64, (z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n);
    z = BigInt.asUintN(64, (z ^ (z >> 27n)) * 0x94d049bb133111ebn);
    z ^= z >> 31n;
    return Number(z >> 11n) * 2 ** -53;
  };
}

/** Whether each of `n` calls through `policy` was refused with ECHAOS. */
async function injected(policy, n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    try {
      await policy.execute(async () => 'ok');
      out.push(false);
    } catch (e) {
      assert.ok(isSeawallError(e, 'ECHAOS'), String(e));
      out.push(true);
    }
  }
  return out;
}

test('SplitMix64 gives the published sequence of seed 1234567', () => {
  const r = new SplitMix64(1234567n);
  const got = [1, 2, 3, 4, 5].map(() => r.nextU64());
  assert.deepEqual(got, [6457827717110365317n, 3203168211198807973n, 9817491932198370423n, 4593380528125082431n, 16408922859458223821n]);
});

test('rules are checked: EINVALIDCONFIG names the field, and a bad set changes nothing', () => {
  const c = chaos('check', { enabled: true, latencyMs: 5 });
  for (const [rules, field] of [
    [{ probability: 1.5 }, 'rules.probability'],
    [{ probability: -0.1 }, 'rules.probability'],
    [{ failureRate: 2 }, 'rules.failureRate'],
    [{ failureRate: '0.5' }, 'rules.failureRate'],
    [{ latencyMs: -1 }, 'rules.latencyMs'],
    [{ latencyMs: Infinity }, 'rules.latencyMs'],
    [{ enabled: 'yes' }, 'rules.enabled'],
    [{ hang: 1 }, 'rules.hang'],
    [{ latency: 100 }, 'rules.latency'],
    [[], 'rules'],
  ]) {
    assert.throws(() => c.set(rules), (e) => isSeawallError(e, 'EINVALIDCONFIG') && e.field === field, JSON.stringify(rules));
  }
  assert.deepEqual(c.rules, { enabled: true, probability: 1, latencyMs: 5, failureRate: 0, hang: false });
  assert.throws(() => chaos(''), (e) => e.field === 'name');
  assert.throws(() => chaos('check', undefined, { seed: -1 }), (e) => e.field === 'seed');
  assert.throws(() => chaos('check', undefined, { sed: 1 }), (e) => e.field === 'options.sed');
});

test('off unless enabled: rules without enabled: true inject nothing and draw nothing', async () => {
  const c = chaos('off', { failureRate: 1, hang: true, latencyMs: 10000 }, { seed: 7 });
  let ran = 0;
  for (let i = 0; i < 50; i++) assert.equal(await c.execute(async () => ++ran), i + 1);
  assert.deepEqual(c.metrics(), { name: 'off', enabled: false, calls: 50, passed: 50, latency: 0, failures: 0, hangs: 0 });
  // Nothing was drawn: enabled now, the first draw is the seed's first.
  c.set({ enabled: true, probability: 0.5, failureRate: 1 });
  const first = reference(7)() < 0.5;
  assert.deepEqual(await injected(c, 1), [first]);
});

test('failureRate 1: every call rejects with ECHAOS naming the policy, and fn never runs', async () => {
  const c = chaos('always-fails', { enabled: true, failureRate: 1 });
  let ran = 0;
  for (let i = 0; i < 3; i++) {
    const e = await rejection(c.execute(async () => ++ran));
    assert.equal(e.code, 'ECHAOS');
    assert.equal(e.chaos, 'always-fails');
  }
  assert.equal(ran, 0);
  assert.deepEqual(c.metrics(), { name: 'always-fails', enabled: true, calls: 3, passed: 0, latency: 0, failures: 3, hangs: 0 });
});

test('one seed gives the reference sequence: probability draws, then failureRate draws of the applied calls', async () => {
  const n = 2000;
  const p = 0.3;
  const a = chaos('seeded-a', { enabled: true, probability: p, failureRate: 1 }, { seed: 42 });
  const got = await injected(a, n);
  const r = reference(42);
  assert.deepEqual(got, Array.from({ length: n }, () => r() < p));
  // Statistical bound, independent of any generator: within 4.5 σ of n·p.
  const hits = got.filter(Boolean).length;
  const sigma = Math.sqrt(n * p * (1 - p));
  assert.ok(Math.abs(hits - n * p) < 4.5 * sigma, `${hits} injected of ${n}`);
  // Reseeding replays the run exactly; another seed does not.
  a.reseed(42);
  assert.deepEqual(await injected(a, n), got);
  const b = chaos('seeded-b', { enabled: true, probability: p, failureRate: 1 }, { seed: 43 });
  assert.notDeepEqual(await injected(b, n), got);

  // probability 0.5 and failureRate 0.5: two draws for each applied call.
  const c = chaos('seeded-c', { enabled: true, probability: 0.5, failureRate: 0.5 }, { seed: 2n ** 63n + 5n });
  const rc = reference(2n ** 63n + 5n);
  const expected = Array.from({ length: n }, () => rc() < 0.5 && rc() < 0.5);
  const gotC = await injected(c, n);
  assert.deepEqual(gotC, expected);
  const failures = gotC.filter(Boolean).length;
  assert.ok(Math.abs(failures - n * 0.25) < 4.5 * Math.sqrt(n * 0.25 * 0.75), `${failures} of ${n}`);
  assert.equal(c.metrics().failures, failures);
  assert.equal(c.metrics().passed, n - failures);
});

test('injected latency delays the call, then it runs', async () => {
  const c = chaos('slow', { enabled: true, latencyMs: 40 });
  const t0 = performance.now();
  assert.equal(await c.execute(async () => 'done'), 'done');
  assert.ok(performance.now() - t0 >= 39, `${performance.now() - t0} ms`);
  assert.deepEqual(c.metrics(), { name: 'slow', enabled: true, calls: 1, passed: 0, latency: 1, failures: 0, hangs: 0 });
});

test('a hang under timeout(50) rejects ETIMEDOUT at the timeout, and the hang is cut short', async () => {
  const c = chaos('hangs', { enabled: true, hang: true });
  let ran = false;
  let seen;
  const t0 = performance.now();
  const e = await rejection(wrap(timeout(50), c).execute((ctx) => {
    ran = true;
    return ctx;
  }));
  const took = performance.now() - t0;
  assert.equal(e.code, 'ETIMEDOUT');
  assert.ok(took >= 45 && took < 1000, `${took} ms`);
  assert.equal(ran, false);
  assert.equal(c.metrics().hangs, 1);
  // Directly: the caller's abort ends the hang with EABORTED, its reason the cause.
  const ac = new AbortController();
  const p = c.execute(async () => 'never', { signal: ac.signal }).catch((err) => { seen = err; });
  setTimeout(() => ac.abort(new Error('caller gave up')), 10);
  await p;
  assert.equal(seen.code, 'EABORTED');
  assert.equal(seen.cause.message, 'caller gave up');
});

test('the caller\'s cancellation cuts an injected latency short at once', async () => {
  const c = chaos('long-latency', { enabled: true, latencyMs: 60000 });
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 20);
  const t0 = performance.now();
  const e = await rejection(c.execute(async () => 'late', ac.signal));
  assert.equal(e.code, 'EABORTED');
  assert.ok(performance.now() - t0 < 5000);
  // Already aborted: no wait at all.
  assert.equal((await rejection(c.execute(async () => 'late', { signal: AbortSignal.abort() }))).code, 'EABORTED');
});

test('a breaker around chaos sees injected failures as dependency failures and opens', async () => {
  const c = chaos('breaks', { enabled: true, failureRate: 1 });
  const breaker = new CircuitBreaker({ consecutiveFailures: 3, openDurationMs: 60000 });
  const guarded = wrap(breaker, c);
  for (let i = 0; i < 3; i++) assert.equal((await rejection(guarded.execute(async () => 'ok'))).code, 'ECHAOS');
  assert.equal(breaker.state, 'open');
  assert.equal((await rejection(guarded.execute(async () => 'ok'))).code, 'ECIRCUITOPEN');
  assert.equal(c.metrics().calls, 3);
});

test('rules changed at run time take effect on the next call; forDependency wraps through the named policy', async () => {
  const fn = chaos.forDependency('inventory-rt')(async (a, b) => a + b);
  assert.equal(await fn(2, 3), 5);
  chaos('inventory-rt', { enabled: true, failureRate: 1 });
  assert.equal((await rejection(fn(2, 3))).code, 'ECHAOS');
  chaos('inventory-rt').set({ enabled: false });
  assert.equal(await fn(4, 5), 9);
  assert.equal(chaos.get('inventory-rt').metrics().failures, 1);
  chaos('inventory-rt', { enabled: true, failureRate: 1 });
  chaos.disableAll();
  assert.equal(await fn(1, 1), 2);
});

test('inject listeners see each fault; a throwing listener changes nothing', async () => {
  const c = chaos('listened', { enabled: true, latencyMs: 1, failureRate: 1 });
  const seen = [];
  const warned = [];
  const onWarning = (w) => warned.push(w.name);
  process.on('warning', onWarning);
  const d = c.onInject((e) => {
    seen.push(e.fault);
    throw new Error('listener bug');
  });
  assert.equal((await rejection(c.execute(async () => 1))).code, 'ECHAOS');
  d.dispose();
  await delay(10);
  process.off('warning', onWarning);
  assert.deepEqual(seen, ['latency', 'failure']);
  assert.deepEqual(warned, ['SeawallListenerWarning', 'SeawallListenerWarning']);
});

/**
 * The next reload or error of `file`. The watcher keeps no process alive, so a
 * timer does while the test waits (and fails it if nothing comes in 10 s).
 */
function next(file) {
  return new Promise((resolve, reject) => {
    const done = (v) => { clearTimeout(guard); a.dispose(); b.dispose(); resolve(v); };
    const guard = setTimeout(() => reject(new Error('no reload within 10 s')), 10000);
    const a = file.onReload((e) => done({ reload: e }));
    const b = file.onError((e) => done({ error: e.error }));
  });
}

test('a rules file: loaded, re-read when it changes or is replaced, a bad file keeps the old rules and says why', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'seawall-chaos-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'chaos.json');
  fs.writeFileSync(file, JSON.stringify({ 'f-inventory': { enabled: true, latencyMs: 100 }, 'f-payments': { enabled: true, failureRate: 0.5 } }));
  const rules = loadChaosRules(file, { debounceMs: 20 });
  t.after(() => rules.close());
  assert.deepEqual(rules.names.sort(), ['f-inventory', 'f-payments']);
  assert.deepEqual(chaos.get('f-inventory').rules, { enabled: true, probability: 1, latencyMs: 100, failureRate: 0, hang: false });
  assert.equal(chaos.get('f-payments').rules.failureRate, 0.5);

  // Written in place.
  let changed = next(rules);
  fs.writeFileSync(file, JSON.stringify({ 'f-inventory': { enabled: true, latencyMs: 2000 }, 'f-payments': { enabled: true, failureRate: 0.5 } }));
  assert.ok((await changed).reload);
  assert.equal(chaos.get('f-inventory').rules.latencyMs, 2000);

  // Not JSON: reported, nothing changes.
  changed = next(rules);
  fs.writeFileSync(file, '{ "f-inventory": { "enabled": tru');
  let got = await changed;
  assert.ok(isSeawallError(got.error, 'EINVALIDCONFIG') && got.error.field === 'file', String(got.error));
  assert.equal(chaos.get('f-inventory').rules.latencyMs, 2000);

  // A bad field: named, and the other policy's good rules are not applied either.
  changed = next(rules);
  fs.writeFileSync(file, JSON.stringify({ 'f-inventory': { enabled: true, probability: 2 }, 'f-payments': { enabled: true, failureRate: 1 } }));
  got = await changed;
  assert.equal(got.error.field, 'f-inventory.probability');
  assert.equal(chaos.get('f-payments').rules.failureRate, 0.5);

  // Replaced by a rename (as editors and config tools do), without f-payments: turned off.
  changed = next(rules);
  fs.writeFileSync(`${file}.tmp`, JSON.stringify({ 'f-inventory': { enabled: true, failureRate: 1 } }));
  fs.renameSync(`${file}.tmp`, file);
  assert.ok((await changed).reload);
  assert.deepEqual(chaos.get('f-inventory').rules, { enabled: true, probability: 1, latencyMs: 0, failureRate: 1, hang: false });
  assert.equal(chaos.get('f-payments').rules.enabled, false);
  assert.deepEqual(rules.names, ['f-inventory']);

  // reload() itself throws for a bad file, and keeps the rules.
  fs.writeFileSync(file, '[]');
  assert.throws(() => rules.reload(), (e) => e.code === 'EINVALIDCONFIG' && e.field === 'file');
  assert.equal(chaos.get('f-inventory').rules.failureRate, 1);

  // A file that is bad from the start is an error at once.
  const bad = path.join(dir, 'bad.json');
  fs.writeFileSync(bad, JSON.stringify({ x: { enabled: 'sometimes' } }));
  assert.throws(() => loadChaosRules(bad), (e) => e.code === 'EINVALIDCONFIG' && e.field === 'x.enabled');
  assert.throws(() => loadChaosRules(path.join(dir, 'missing.json')), (e) => e.code === 'EINVALIDCONFIG' && e.field === 'file');
  assert.equal(chaos.load, loadChaosRules);
});

test('a bad change with no error listener goes to the warning channel', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'seawall-chaos-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'rules.json');
  fs.writeFileSync(file, JSON.stringify({ 'w-dep': { enabled: true, latencyMs: 1 } }));
  const rules = loadChaosRules(file, { debounceMs: 10 });
  t.after(() => rules.close());
  const guard = setTimeout(() => {}, 10000);
  const warned = new Promise((resolve) => process.once('warning', (w) => { clearTimeout(guard); resolve(w); }));
  fs.writeFileSync(file, 'nope');
  const w = await warned;
  assert.equal(w.name, 'SeawallChaosWarning');
  assert.match(w.message, /previous rules stay/);
  assert.equal(chaos.get('w-dep').rules.latencyMs, 1);
});

test('registerMetrics counts what each chaos policy injected', async () => {
  const client = require('prom-client');
  const registry = new client.Registry();
  const c = chaos('metered', { enabled: true, failureRate: 1 });
  registerMetrics(registry, { chaos: [c] });
  for (let i = 0; i < 3; i++) await rejection(c.execute(async () => 1));
  c.set({ enabled: false });
  await c.execute(async () => 1);
  const text = await registry.metrics();
  // Per process: the series says which process.
  const pid = `pid="${process.pid}"`;
  assert.ok(text.includes(`seawall_chaos_calls_total{chaos="metered",result="failure",${pid}} 3`), text);
  assert.ok(text.includes(`seawall_chaos_calls_total{chaos="metered",result="passed",${pid}} 1`), text);
  assert.ok(text.includes(`seawall_chaos_calls_total{chaos="metered",result="hang",${pid}} 0`), text);
  assert.ok(chaos.all().includes(c));
});
