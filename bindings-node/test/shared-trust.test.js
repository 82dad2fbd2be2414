'use strict';
// A shared region is this user's own (DESIGN §8): a symbolic link planted at its
// name, or a file group or others may write, is refused at once with ESHARED and
// reason 'untrusted', and nothing behind it is touched.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const { CircuitBreaker, Bulkhead, sharedSupported } = require('..');

const skip = !sharedSupported() || !fs.existsSync('/dev/shm') ? 'no shared regions on this machine' : false;

function unique(tag) {
  return `node-trust-${process.pid}-${tag}-${Math.random().toString(36).slice(2, 8)}`;
}

test('a symbolic link planted at a shared breaker name is refused, its target untouched', { skip }, (t) => {
  const name = unique('link');
  const target = `/dev/shm/seawall-breaker-${unique('target')}`;
  const link = `/dev/shm/seawall-breaker-${name}`;
  t.after(() => { fs.rmSync(target, { force: true }); fs.rmSync(link, { force: true }); });
  fs.writeFileSync(target, 'not yours', { mode: 0o600 });
  fs.symlinkSync(target, link);
  const started = Date.now();
  assert.throws(() => new CircuitBreaker({ shared: name }), (e) => {
    assert.equal(e.code, 'ESHARED');
    assert.equal(e.reason, 'untrusted');
    assert.match(e.message, /symbolic link/);
    return true;
  });
  assert.ok(Date.now() - started < 500, 'refused at once');
  assert.equal(fs.readFileSync(target, 'utf8'), 'not yours');
});

test('a shared bulkhead others may write is refused as untrusted', { skip }, (t) => {
  const name = unique('mode');
  const file = `/dev/shm/seawall-semaphore-${name}`;
  t.after(() => fs.rmSync(file, { force: true }));
  new Bulkhead({ shared: name, maxConcurrent: 2 });
  fs.chmodSync(file, 0o666);
  assert.throws(() => new Bulkhead({ shared: name, maxConcurrent: 2 }),
    { code: 'ESHARED', reason: 'untrusted', message: /0666/ });
  fs.chmodSync(file, 0o600);
  assert.doesNotThrow(() => new Bulkhead({ shared: name, maxConcurrent: 2 }));
});

test('the health report of an overwritten breaker region is unhealthy with the error, not a thrown error', { skip }, async (t) => {
  const { healthReport } = require('../lib/middleware/common');
  const name = `node-health-corrupt-${process.pid}`;
  CircuitBreaker.unlinkShared(name);
  t.after(() => CircuitBreaker.unlinkShared(name));
  const b = new CircuitBreaker({ shared: name, consecutiveFailures: 1, openDurationMs: 60_000 });
  await assert.rejects(b.execute(async () => { throw new Error('down'); }), /down/);
  assert.equal(healthReport({ db: { breaker: b, critical: true } })[0], 503); // open: honest
  // open_until (the high half of the core's first 128-bit word, after the
  // 128-byte header) 54 years away: a value no honest breaker holds.
  const fd = fs.openSync(`/dev/shm/seawall-breaker-${name}`, 'r+');
  const word = Buffer.alloc(8);
  word.writeBigUInt64LE(process.hrtime.bigint() + 1_713_643_524_538_000_000n);
  fs.writeSync(fd, word, 0, 8, 128 + 8);
  fs.closeSync(fd);
  const [status, body] = healthReport({ db: { breaker: b, critical: true } });
  assert.equal(status, 503);
  assert.equal(body.dependencies.db.status, 'unhealthy');
  assert.equal(body.dependencies.db.breaker, 'unknown');
  assert.match(body.dependencies.db.error, /never gives/);
});
