// Compiled with `tsc --strict --noEmit` (test/tsconfig.json): the package's types
// must accept this code and keep the wrapped functions' types; the lines marked
// as expected errors must stay errors.
import {
  CircuitBreaker, Bulkhead, Retry, retry, RetryBudget, RetryThrottle, timeout, wrap, pipeline, StaleCache,
  Deadline, isSeawallError, SeawallError, Health, registerMetrics, instrumentOtel, setTesting, type BreakerState,
  type RetryMetrics, RateLimiter, type KeyedRateLimit, type RateLimiterMetrics,
  type PipelineResult,
} from 'seawall';

async function getUser(id: number, verbose: boolean): Promise<{ id: number; name: string }> {
  return { id, name: verbose ? 'Ada Lovelace' : 'Ada' };
}

export async function main(): Promise<void> {
  const breaker = new CircuitBreaker({
    name: 'users',
    window: { kind: 'count', size: 100 },
    minimumCalls: 20,
    failureRateThreshold: 50,
    slowCallDurationMs: 2000,
    slowCallRateThreshold: 80,
    consecutiveFailures: null,
    openDurationMs: 30_000,
    openBackoffMultiplier: 2,
    maxOpenDurationMs: 300_000,
    openJitterFactor: 0.1,
    halfOpenMaxCalls: 2,
    halfOpenSuccessThreshold: 2,
    halfOpenMaxWaitMs: 60_000,
    isFailure: (e) => !(e instanceof TypeError),
  });

  // wrap keeps the parameter and result types.
  const guarded = breaker.wrap(getUser);
  const user = await guarded(1, true);
  const name: string = user.name;
  // @ts-expect-error the wrapped function still takes (number, boolean)
  await guarded('1', true);

  const n: number = await breaker.execute(async ({ signal }) => (signal?.aborted ? 0 : 1));
  const state: BreakerState = breaker.state;
  const sub = breaker.onOpen(({ retryAfterMs }) => console.log(retryAfterMs));
  sub.dispose();
  breaker.on('stateChange', ({ from, to }) => console.log(from, to));

  try {
    await breaker.execute(() => 1);
  } catch (e) {
    if (isSeawallError(e, 'ECIRCUITOPEN')) {
      const wait: number | undefined = e.retryAfterMs;
      console.log(wait);
    }
  }

  const opossumStyle = new CircuitBreaker(getUser, { openDurationMs: 1000 });
  const u2 = await opossumStyle.fire(2, false);
  console.log(u2);

  const bulkhead = new Bulkhead({ maxConcurrent: 10, maxQueue: 20, queueTimeoutMs: 500, shares: { critical: 100, high: 80, normal: 50, low: 20 } });
  const b: string = await bulkhead.execute(async () => 'x', { priority: 'low' });
  // @ts-expect-error not a priority
  await bulkhead.execute(async () => 'x', { priority: 'urgent' });

  const budget = new RetryBudget({ ttlMs: 10_000, percentCanRetry: 20, minRetriesPerSec: 10 });

  // One bulkhead, budget and throttle for every process of the host.
  const sharedDb = new Bulkhead({ shared: 'db', maxConcurrent: 8, maxQueue: 32, queueTimeoutMs: 200 });
  const isShared: boolean = sharedDb.isShared;
  const { permits, tickets }: { permits: number; tickets: number } = sharedDb.reclaimAbandoned();
  const outstanding: number | null = sharedDb.metrics().permitsOutstanding;
  Bulkhead.unlinkShared('db');
  const sharedBudget = new RetryBudget({ shared: 'db', percentCanRetry: 20 });
  const sharedThrottle = new RetryThrottle({ shared: 'db', maxTokens: 10, tokenRatio: 0.1 });
  console.log(isShared, permits, tickets, outstanding, sharedBudget.isShared, sharedThrottle.tokens);
  RetryBudget.unlinkShared('db');
  RetryThrottle.unlinkShared('db');
  // @ts-expect-error a region name is a string
  new Bulkhead({ shared: 7 });
  const wideTable = new CircuitBreaker({ shared: 'db', permitSlots: 32768 });
  console.log(wideTable.isShared);
  // @ts-expect-error permitSlots is one of the table sizes
  new CircuitBreaker({ shared: 'db', permitSlots: 1000 });
  const r: number = await retry(async ({ attempt }) => attempt, {
    attempts: 5,
    backoff: { baseMs: 100, multiplier: 2, maxMs: 2000, jitter: 'decorrelated' },
    budget,
    deadlineMs: 3000,
    signal: AbortSignal.timeout(10_000),
  });
  const policy = new Retry({ attempts: 3, backoff: { jitter: 'equal' }, name: 'users' });
  const tally: RetryMetrics = policy.metrics();
  const retries: number = tally.retries + tally.giveUps.maxAttempts;
  const sources = instrumentOtel({ breakers: [breaker], bulkheads: [bulkhead], retries: [policy] });
  sources.retries.add(policy);

  const onResult = new Retry({ attempts: 3, backoff: [0, 100, 200], retryOnResult: (r: { status: number }) => r.status === 503 });
  const linear = new Retry({ backoff: { kind: 'linear', baseMs: 100, stepMs: 50, maxMs: 1000 } });
  const custom = new Retry({ backoff: (attempt: number) => attempt * 10, onRetry: ({ result }) => console.log(result) });
  new Retry({ backoff: { kind: 'constant', delayMs: 0 } });
  new Retry({ backoff: { baseMs: 0 } });
  // @ts-expect-error decorrelated jitter is the exponential family's
  new Retry({ backoff: { kind: 'list', delaysMs: [1], jitter: 'decorrelated' } });
  const was: { sleep: boolean; attempts: number | undefined } = setTesting({ attempts: 2 });
  setTesting(false);
  const resultBreaker = new CircuitBreaker<[], { status: number }>({ isFailureResult: (r) => r.status >= 500 });
  resultBreaker.on('failure', ({ result }) => console.log(result));
  const resultPipeline = pipeline({ isFailureResult: (r: { status: number }) => r.status >= 500 });
  const pr = await resultPipeline.execute(() => ({ status: 503 }));
  console.log(onResult, linear, custom, was, pr.result);
  const hooks = [
    linear.onRetry(({ attempt, delayMs }) => console.log(attempt, delayMs)),
    linear.onGiveUp(({ reason }) => { const r: 'maxAttempts' | 'deadline' | 'budgetExhausted' | 'throttled' | 'notRetryable' | 'aborted' = reason; console.log(r); }),
    new Bulkhead().onReject(({ reason, priority }) => console.log(reason, priority)),
    timeout(10).onTimeout(({ timeoutMs }) => console.log(timeoutMs)),
    resultPipeline.onFallback(({ source }) => console.log(source)),
  ];
  for (const h of hooks) h.dispose();
  const saved = resultBreaker.toJSON();
  const resumed = new CircuitBreaker({ consecutiveFailures: 5, initialState: saved });
  const resumedLeft: number | null = resumed.toJSON().retryAfterMs;
  // @ts-expect-error a record's version is 1
  new CircuitBreaker({ initialState: { version: 2, state: 'open', openings: 1, retryAfterMs: 5 } });
  console.log(resumedLeft);
  const cooperative = timeout(500, 'cooperative');
  const strategy: 'aggressive' | 'cooperative' = cooperative.strategy;
  // @ts-expect-error only 'aggressive' and 'cooperative'
  timeout(500, 'polite');
  const bare: number = await breaker.execute(() => 7, new AbortController().signal);
  console.log(strategy, bare);
  const composed = wrap(bulkhead, breaker, policy, timeout(500));
  const v: number = await composed.execute(async ({ signal }) => (signal ? 1 : 2));

  const p = pipeline({ breaker, retry: policy, timeout: timeout(500), bulkhead, deadlineMs: 3000, staleCache: new StaleCache({ max: 100 }), fallback: () => ({ id: 0, name: 'nobody' }) });
  const res: PipelineResult<{ id: number; name: string }> = await p.execute(() => getUser(3, false), { key: 'user:3' });
  if (res.degraded) console.log(res.source);

  const d = new Deadline(3000);
  const left: number = d.allocateMs(500);
  const h = new Health();
  h.record(12, false);
  const e = new SeawallError('ETIMEDOUT', 'x');
  const upstream = new RateLimiter({ rate: 100, perMs: 1000, burst: 10, shared: 'upstream', maxWaitMs: 0 });
  const wait: number = upstream.take(1, { nowMs: 5 });
  const ok: boolean = upstream.tryAcquire();
  await upstream.acquire(1, { signal: AbortSignal.timeout(1000), timeoutMs: 500 });
  const perClient = new RateLimiter({ rate: 10, keyed: true });
  const client: KeyedRateLimit = perClient.forKey('client-1');
  const got: string = await client.execute(async () => 'x', AbortSignal.timeout(1000));
  const limitedOnce: number = await upstream.execute(async () => 1, AbortSignal.timeout(1000));
  const limited = pipeline({ retry: policy, rateLimiter: upstream, timeout: timeout(500) });
  const lm: RateLimiterMetrics = upstream.metrics();
  console.log(name, n, state, b, r, v, left, h.status(), e.code, registerMetrics, retries, wait, ok, got, limited, limitedOnce, lm.admitted, e.retryAfterMs);
}

// ---- Chaos injection, the ambient call context and the framework middleware ----
import {
  chaos, Chaos, loadChaosRules, withCallContext, callContext, type ChaosRules, type ChaosMetrics,
} from 'seawall';
import { createServer } from 'node:http';
import Fastify from 'fastify';
import { middleware, health, defaultPriority, type HealthReport } from 'seawall/express';
import seawallFastify = require('seawall/fastify');

export async function chaosUsage(): Promise<void> {
  const rules: ChaosRules = { enabled: true, probability: 0.5, latencyMs: 100, failureRate: 0.5, hang: false };
  const inventory: Chaos = chaos('inventory', rules, { seed: 42 });
  const n: number = await wrap(timeout(50), inventory).execute(async () => 1);
  const fetchStock = chaos.forDependency('inventory')(async (sku: string) => sku.length);
  const stock: number = await fetchStock('sku-1');
  const m: ChaosMetrics = inventory.metrics();
  inventory.set({ enabled: false }).reseed(7n);
  inventory.onInject((e) => e.fault satisfies 'latency' | 'failure' | 'hang');
  const file = loadChaosRules('/etc/chaos.json', { debounceMs: 100 });
  file.onError(({ error }) => error.code);
  const names: string[] = file.reload();
  file.close();
  registerMetrics({ registerMetric() {} }, { chaos: chaos.all() });
  const d: number | undefined = withCallContext({ deadline: new Deadline(100) }, () => callContext()?.deadline?.remainingMs());
  // @ts-expect-error latency is latencyMs in Node
  chaos('x', { latency: 100 });
  // @ts-expect-error a seed is a number or a bigint
  chaos('x', undefined, { seed: 'one' });
  void [n, stock, m, names, d];

  const bulkhead = new Bulkhead({ maxConcurrent: 100, shares: { critical: 100, high: 80, normal: 50, low: 20 } });
  // Express's request and response are Node's: the middleware runs on a bare server too.
  const mw = middleware({ bulkhead, getPriority: (req) => (req.headers['x-vip'] ? 'high' : defaultPriority(req)), deadlineHeader: 'x-request-deadline-ms' });
  const healthRoute = health({ dependencies: { inventory: { health: new Health(), breaker: new CircuitBreaker(), critical: true } } });
  createServer((req, res) => mw(req, res, () => healthRoute(req, res)));
  // @ts-expect-error priorities are critical, high, normal, low
  middleware({ getPriority: () => 'urgent' });

  const f = Fastify();
  await f.register(seawallFastify, { bulkhead, getPriority: (req) => (req.url.startsWith('/batch') ? 'low' : 'normal'), health: { path: '/healthz', dependencies: {} } });
  const report: HealthReport = { status: 'degraded', dependencies: {} };
  void report;
}
