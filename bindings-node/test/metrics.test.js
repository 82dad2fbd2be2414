'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const client = require('prom-client');
const { CircuitBreaker, Bulkhead, RetryBudget, registerMetrics } = require('..');
const { rejection } = require('./helpers');

test('metrics() snapshots and prom-client gauges / counters read at scrape time', async () => {
  const breaker = new CircuitBreaker({ name: 'inventory', consecutiveFailures: 2 });
  for (const v of [1, 2, 3]) await breaker.execute(async () => v);
  await breaker.execute(async () => { throw new Error('x'); }).catch(() => {});
  await breaker.execute(async () => { throw new Error('y'); }).catch(() => {});
  await rejection(breaker.execute(async () => 0));
  const bulkhead = new Bulkhead({ name: 'db', maxConcurrent: 2, shares: { low: 50 } });
  let release;
  const held = bulkhead.execute(() => new Promise((r) => { release = r; }));
  await rejection(bulkhead.execute(async () => 0, { priority: 'low' }));
  const budget = new RetryBudget({ name: 'inv', minRetriesPerSec: 1, ttlMs: 2000 });

  const registry = new client.Registry();
  const sources = registerMetrics(registry, { breakers: [breaker], bulkheads: [bulkhead], budgets: [budget] });
  const text = await registry.metrics();
  const has = (line) => assert.ok(text.includes(line), `missing ${line}\n${text}`);
  has('seawall_breaker_state{breaker="inventory",state="open"} 1');
  has('seawall_breaker_state{breaker="inventory",state="closed"} 0');
  has('seawall_breaker_calls_total{breaker="inventory",outcome="success"} 3');
  has('seawall_breaker_calls_total{breaker="inventory",outcome="failure"} 2');
  has('seawall_breaker_calls_total{breaker="inventory",outcome="rejected"} 1');
  has('seawall_breaker_transitions_total{breaker="inventory"} 1');
  has('seawall_bulkhead_active{bulkhead="db"} 1');
  has('seawall_bulkhead_rejected_total{bulkhead="db",reason="shed"} 1');
  has('seawall_retry_budget_available{budget="inv"} 2'); // reserve 1/s · 2 s
  // Counters follow the totals between scrapes.
  breaker.reset();
  await breaker.execute(async () => 4);
  const again = await registry.metrics();
  assert.ok(again.includes('seawall_breaker_calls_total{breaker="inventory",outcome="success"} 4'), again);
  assert.equal(sources.breakers.size, 1);
  release();
  await held;
});
