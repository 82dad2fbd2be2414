'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { Bulkhead } = require('..');
const { delay, deferred, rejection } = require('./helpers');

test('at most maxConcurrent run at once; waiters are served FIFO', async () => {
  const b = new Bulkhead({ maxConcurrent: 2, maxQueue: 10 });
  let running = 0;
  let peak = 0;
  const order = [];
  await Promise.all(Array.from({ length: 8 }, (_, i) => b.execute(async () => {
    running += 1;
    peak = Math.max(peak, running);
    order.push(i);
    await delay(5);
    running -= 1;
  })));
  assert.equal(peak, 2);
  assert.deepEqual(order, [0, 1, 2, 3, 4, 5, 6, 7]);
  const m = b.metrics();
  assert.equal(m.active, 0);
  assert.equal(m.queued, 0);
  assert.equal(m.admitted, 8);
});

test('a full queue rejects with EBULKHEADFULL and the occupancy', async () => {
  const b = new Bulkhead({ maxConcurrent: 1, maxQueue: 1, name: 'inv' });
  const g = deferred();
  const p1 = b.execute(() => g.promise);
  const p2 = b.execute(async () => 'second');
  const e = await rejection(b.execute(async () => 'third'));
  assert.equal(e.code, 'EBULKHEADFULL');
  assert.equal(e.reason, 'full');
  assert.equal(e.active, 1);
  assert.equal(e.queued, 1);
  assert.equal(e.bulkhead, 'inv');
  g.resolve('first');
  assert.deepEqual(await Promise.all([p1, p2]), ['first', 'second']);
});

test('priority shares shed at once (limits max(1, ⌊10 · share⌋): low 2, normal 5, high 8)', async () => {
  const b = new Bulkhead({ maxConcurrent: 10, maxQueue: 10, shares: { critical: 100, high: 80, normal: 50, low: 20 } });
  assert.deepEqual(b.metrics().limits, { critical: 10, high: 8, normal: 5, low: 2 });
  const g = deferred();
  const held = [];
  for (let i = 0; i < 2; i++) held.push(b.execute(() => g.promise, { priority: 'low' }));
  const low = await rejection(b.execute(async () => 1, { priority: 'low' }));
  assert.equal(low.reason, 'shed');
  for (let i = 0; i < 3; i++) held.push(b.execute(() => g.promise, { priority: 'normal' }));
  assert.equal((await rejection(b.execute(async () => 1))).reason, 'shed');
  for (let i = 0; i < 3; i++) held.push(b.execute(() => g.promise, { priority: 'high' }));
  assert.equal((await rejection(b.execute(async () => 1, { priority: 'high' }))).reason, 'shed');
  held.push(b.execute(() => g.promise, { priority: 'critical' }));
  held.push(b.execute(() => g.promise, { priority: 'critical' }));
  assert.equal(b.metrics().active, 10);
  // critical may wait when every permit is taken
  const waiting = b.execute(async () => 'critical waited', { priority: 'critical' });
  await delay(1);
  assert.equal(b.metrics().queued, 1);
  g.resolve();
  await Promise.all(held);
  assert.equal(await waiting, 'critical waited');
  assert.deepEqual(b.metrics().rejected, { shed: 3, full: 0, queueTimeout: 0, aborted: 0 });
});

test('an aborted waiter leaves at once and the next waiter gets the permit (cockatiel #112)', async () => {
  const b = new Bulkhead({ maxConcurrent: 1, maxQueue: 5 });
  const g = deferred();
  const holder = b.execute(() => g.promise);
  const ac = new AbortController();
  const aborted = b.execute(async () => 'never', { signal: ac.signal });
  const next = b.execute(async () => 'next');
  await delay(1);
  assert.equal(b.metrics().queued, 2);
  const t0 = performance.now();
  ac.abort();
  const e = await rejection(aborted);
  assert.equal(e.code, 'EABORTED');
  assert.ok(performance.now() - t0 < 500, 'at once, not when the holder ends');
  assert.equal(b.metrics().queued, 1);
  g.resolve('held');
  assert.equal(await holder, 'held');
  assert.equal(await next, 'next');
  assert.deepEqual({ active: b.metrics().active, queued: b.metrics().queued }, { active: 0, queued: 0 });
});

test('queueTimeoutMs: a waiter gives up on time, and the waiter behind it is still served', async () => {
  const b = new Bulkhead({ maxConcurrent: 1, maxQueue: 5, queueTimeoutMs: 30 });
  const g = deferred();
  const holder = b.execute(() => g.promise);
  const t0 = performance.now();
  const first = b.execute(async () => 'x');
  await delay(15);
  const second = b.execute(async () => 'second');
  const e = await rejection(first);
  const waited = performance.now() - t0;
  assert.equal(e.code, 'EBULKHEADFULL');
  assert.equal(e.reason, 'queueTimeout');
  assert.ok(waited >= 29 && waited < 500, `waited ${waited}`);
  g.resolve();
  await holder;
  assert.equal(await second, 'second');
  assert.equal(b.metrics().rejected.queueTimeout, 1);
  assert.equal(b.metrics().active, 0);
});

test('an error in the call releases the permit', async () => {
  const b = new Bulkhead({ maxConcurrent: 1 });
  const e = await rejection(b.execute(async () => { throw new Error('mine'); }));
  assert.equal(e.message, 'mine');
  assert.equal(await b.execute(async () => 'again'), 'again');
  assert.equal(b.metrics().active, 0);
});

test('invalid bulkhead options throw EINVALIDCONFIG naming the option', () => {
  assert.throws(() => new Bulkhead({ maxConcurrent: 0 }), { code: 'EINVALIDCONFIG', field: 'maxConcurrent' });
  // The core semaphore's 64-bit state word counts 20 bits of permits.
  assert.throws(() => new Bulkhead({ maxConcurrent: 2 ** 20 }), { code: 'EINVALIDCONFIG', field: 'maxConcurrent', message: /1048575/ });
  assert.equal(new Bulkhead({ maxConcurrent: 2 ** 20 - 1 }).maxConcurrent, 1048575);
  assert.throws(() => new Bulkhead({ shares: { low: 120 } }), { code: 'EINVALIDCONFIG', field: 'shares.low' });
  assert.throws(() => new Bulkhead({ maxQueue: -1 }), { code: 'EINVALIDCONFIG', field: 'maxQueue' });
  assert.throws(() => new Bulkhead({ shared: '' }), { code: 'EINVALIDCONFIG', field: 'shared' });
  assert.throws(() => new Bulkhead({ shared: '../etc' }), { code: 'EINVALIDCONFIG', field: 'shared' });
  // A shared semaphore's queue ring has 1024 slots and its holder table room for
  // 4096 permits (a local one takes up to 32 768 waiters).
  const name = `node-limits-${process.pid}`;
  assert.throws(() => new Bulkhead({ shared: name, maxQueue: 1025 }), { code: 'EINVALIDCONFIG', field: 'maxQueue' });
  assert.throws(() => new Bulkhead({ shared: name, maxConcurrent: 4097 }), { code: 'EINVALIDCONFIG', field: 'maxConcurrent' });
  assert.equal(new Bulkhead({ maxQueue: 1025 }).maxQueue, 1025);
  // One rule in seawall-host for both bindings: 0 ..= 32768 waiters locally.
  assert.equal(new Bulkhead({ maxQueue: 32768 }).metrics().queueRing, 32768);
  assert.equal(new Bulkhead({ maxQueue: 1025 }).metrics().queueRing, 4096);
  assert.throws(() => new Bulkhead({ maxQueue: 32769 }), { code: 'EINVALIDCONFIG', field: 'maxQueue' });
  Bulkhead.unlinkShared(name);
});
