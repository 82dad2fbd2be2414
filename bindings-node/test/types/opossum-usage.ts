// Compiled with `tsc --strict --noEmit` (test/tsconfig.json): opossum-style code
// against seawall/opossum's types; the lines marked as expected errors must
// stay errors.
import CircuitBreaker = require('seawall/opossum');
import { registerMetrics } from 'seawall';

async function getUser(id: number, verbose: boolean): Promise<{ id: number; name: string }> {
  return { id, name: verbose ? 'Ada Lovelace' : 'Ada' };
}

export async function main(): Promise<void> {
  const options: CircuitBreaker.Options<[number, boolean]> = {
    timeout: 3000,
    errorThresholdPercentage: 50,
    resetTimeout: 30000,
    rollingCountTimeout: 10000,
    rollingCountBuckets: 10,
    volumeThreshold: 5,
    capacity: 10,
    errorFilter: (err: { statusCode?: number }, id: number) => err.statusCode === 404 && id > 0,
    cache: true,
    cacheTTL: 1000,
    cacheGetKey: (id, verbose) => `${id}:${verbose}`,
    coalesce: true,
    coalesceResetOn: ['error', 'timeout'],
    abortController: new AbortController(),
    allowWarmUp: false,
    shared: 'users',
  };
  const breaker = new CircuitBreaker(getUser, options);
  const user: { id: number; name: string } = await breaker.fire(1, true);
  void user;
  // @ts-expect-error fire keeps the action's parameters
  await breaker.fire('1', true);
  const other = new CircuitBreaker(async () => 'fallback');
  breaker.fallback(other).fallback((id: number, _v: boolean, err: unknown) => ({ id, name: String(err) }));
  breaker.on('success', (result, latencyMs: number) => console.log(result.name, latencyMs));
  breaker.on('failure', (err, latencyMs, args) => console.log(err, latencyMs, args[0] + 1));
  breaker.on('timeout', (err) => console.log(err.code === 'ETIMEDOUT'));
  breaker.on('halfOpen', (resetTimeout: number) => console.log(resetTimeout));
  breaker.on('fire', (args) => console.log(args[1] === true));
  breaker.status.on('snapshot', (s) => console.log(s.fires));
  breaker.healthCheck(async function () { return this.name; }, 5000);
  const flags: boolean[] = [breaker.opened, breaker.closed, breaker.halfOpen, breaker.pendingClose, breaker.enabled, breaker.warmUp, breaker.isShutdown];
  const n: number = breaker.stats.fires + breaker.stats.failures + breaker.volumeThreshold;
  const json = breaker.toJSON();
  const restored = new CircuitBreaker(getUser, { state: json.state, status: CircuitBreaker.newStatus({ stats: json.status }) });
  const signal: AbortSignal | undefined = restored.getSignal();
  void [flags, n, signal];
  if (CircuitBreaker.isOurError(new Error('x'))) throw new Error('not ours');
  const metrics = restored.metrics();
  const state: string = metrics.state;
  void state;
  breaker.open();
  breaker.close();
  breaker.disable();
  breaker.enable();
  breaker.clearCache();
  breaker.shutdown();
  // @ts-expect-error timeout is a number of ms or false
  void new CircuitBreaker(getUser, { timeout: 'soon' });
  const constant = new CircuitBreaker('foo');
  const foo: string = await constant.fire();
  void foo;
  void registerMetrics;
}
