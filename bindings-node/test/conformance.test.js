'use strict';
// Every conformance scenario of every primitive passes through the Node package.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { runAll, runFile, scenarioDirs } = require('./conformance');

test('every scenario of every primitive passes (none skipped)', () => {
  const results = runAll(scenarioDirs());
  assert.ok(results.length >= 50, `only ${results.length} scenarios found`);
  const kinds = new Set();
  for (const r of results) {
    const sc = JSON.parse(fs.readFileSync(path.join(r.dir, `${r.id}.json`), 'utf8'));
    for (const k of ['breaker', 'backoff', 'retry_budget', 'retry_throttle', 'semaphore', 'deadline', 'health', 'rate_limiter']) if (sc[k]) kinds.add(k);
    assert.equal(r.verdict, 'PASS', `${r.id}: ${r.message}`);
  }
  assert.equal(kinds.size, 8, `primitives covered: ${[...kinds]}`);
});

test('a scenario whose expectation is wrong FAILs with the step', (t) => {
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'seawall-cases-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'wrong.json');
  // Count window 2, minimum 2, threshold 50: one failure of two calls opens, so
  // "closed" after it is wrong.
  fs.writeFileSync(file, JSON.stringify({
    name: 'wrong on purpose',
    breaker: { window: { kind: 'count', size: 2 }, minimum_calls: 2 },
    steps: [{ at_ms: 0, call: 'success' }, { call: 'failure' }, { expect_state: 'closed' }],
  }));
  const r = runFile(file);
  assert.equal(r.verdict, 'FAIL');
  assert.match(r.message, /^step 2 \(0-based\): expected "closed", got "open"/);
});
