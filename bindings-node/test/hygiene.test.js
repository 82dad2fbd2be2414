'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { getEventListeners } = require('node:events');
const s = require('..');

function runNode(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    let lineAt;
    child.stdout.on('data', (d) => {
      out += d;
      if (lineAt === undefined && out.includes('\n')) lineAt = performance.now();
    });
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, out, exitedAfterMs: performance.now() - lineAt }));
  });
}

test('no timer or handle keeps the process alive after the work is done', async () => {
  const r = await runNode([path.join(__dirname, 'fixtures', 'exits.js')]);
  assert.equal(r.code, 0);
  const report = JSON.parse(r.out.trim().split('\n')[0]);
  assert.deepEqual(report.resources.filter((x) => x === 'Timeout' || x === 'Immediate'), [], JSON.stringify(report.resources));
  // 60 s timers were configured; the process ends as soon as its work does.
  assert.ok(r.exitedAfterMs < 1000, `exited ${r.exitedAfterMs} ms after its last line`);
});

test('no listener stays on the caller\'s signal: 1000 retries with one signal, no warning', async (t) => {
  const warnings = [];
  const onWarning = (w) => warnings.push(w);
  process.on('warning', onWarning);
  t.after(() => process.off('warning', onWarning));
  const ac = new AbortController();
  const policy = new s.Retry({ attempts: 2, backoff: { baseMs: 0.01, jitter: 'none' } });
  const breaker = new s.CircuitBreaker();
  const bulkhead = new s.Bulkhead({ maxConcurrent: 1, maxQueue: 1000 });
  const to = s.timeout(10_000);
  for (let i = 0; i < 1000; i++) {
    let first = true;
    await policy.execute(async () => {
      if (first) { first = false; throw new Error('once'); }
    }, { signal: ac.signal });
  }
  // A few calls at a time share the signal too (each holds at most two listeners
  // while it runs: Node warns above 10 at once).
  for (let i = 0; i < 250; i++) {
    await Promise.all(Array.from({ length: 4 }, () => bulkhead.execute(
      () => to.execute(() => breaker.execute(async () => 1, { signal: ac.signal }), { signal: ac.signal }),
      { signal: ac.signal },
    )));
  }
  await new Promise((r) => setImmediate(r));
  assert.equal(getEventListeners(ac.signal, 'abort').length, 0);
  assert.deepEqual(warnings.map((w) => w.name), []);
});

test('dropped breakers are garbage-collected: 20 000 created and dropped (--expose-gc)', async () => {
  const r = await runNode(['--expose-gc', path.join(__dirname, 'fixtures', 'gc.js')]);
  assert.equal(r.code, 0);
  const m = JSON.parse(r.out.trim());
  assert.ok(m.collected >= 19_900, `only ${m.collected} of 20 000 collected`);
  assert.ok(m.liveAfter - m.liveBefore <= 100, `${m.liveAfter - m.liveBefore} native breakers still alive`);
  const MB = 1024 * 1024;
  assert.ok(m.heapGrowth < 4 * MB, `heap grew by ${(m.heapGrowth / MB).toFixed(2)} MB`);
  assert.ok(m.externalGrowth < 4 * MB, `external memory grew by ${(m.externalGrowth / MB).toFixed(2)} MB`);
});
