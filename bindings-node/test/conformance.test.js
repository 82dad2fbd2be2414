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

test('a scenario that crashes FAILs alone: the scenarios and folders after it still run', (t) => {
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'seawall-cases-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  // `null` is valid JSON but no scenario: reading a primitive's key of it threw
  // a TypeError out of the runner, and nothing after it was reported.
  fs.writeFileSync(path.join(dir, 'a-null.json'), 'null');
  fs.writeFileSync(path.join(dir, 'b-deadline.json'), JSON.stringify({
    name: 'runs after the crash', deadline: { total_ms: 100 }, steps: [{ at_ms: 0, expect_remaining_ms: 100 }],
  }));
  const missing = path.join(dir, 'no-such-folder');
  const results = runAll([dir, missing, dir]).map((r) => [r.id, r.verdict, r.message]);
  assert.deepEqual(results, [
    ['a-null', 'FAIL', 'malformed: a scenario is a JSON object'],
    ['b-deadline', 'PASS', undefined],
    [missing, 'FAIL', results[2][2]],
    ['a-null', 'FAIL', 'malformed: a scenario is a JSON object'],
    ['b-deadline', 'PASS', undefined],
  ]);
  assert.match(results[2][2], /^cannot read the scenario folder: ENOENT/);
});
