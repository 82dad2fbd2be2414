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
