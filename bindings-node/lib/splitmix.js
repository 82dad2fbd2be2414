'use strict';
// SplitMix64 (Steele, Lea & Flood 2014), the generator of the core's
// `SplitMix64` (core/src/rng.rs), so one seed gives the same 64-bit sequence in
// either. BigInt arithmetic: chaos draws at most two numbers per call, and only
// while a rule is enabled, so this is not a hot path.

const { randomBytes } = require('node:crypto');
const { configError } = require('./errors');

const MASK = (1n << 64n) - 1n;
const GOLDEN = 0x9e3779b97f4a7c15n;

/** A 64-bit seed from `seed` (a whole number ≥ 0 up to 2^53, or a bigint), or from OS entropy. */
function seedOf(seed, field = 'seed') {
  if (seed === undefined) return randomBytes(8).readBigUInt64LE(0);
  if (typeof seed === 'bigint') return BigInt.asUintN(64, seed);
  if (typeof seed === 'number' && Number.isSafeInteger(seed) && seed >= 0) return BigInt(seed);
  throw configError(field, `must be a whole number from 0 to 2^53 - 1 or a bigint, not ${typeof seed === 'number' ? seed : typeof seed}`);
}

class SplitMix64 {
  constructor(seed) {
    this.state = seed & MASK;
  }

  /** The next 64 random bits, as a bigint. */
  nextU64() {
    let z = (this.state + GOLDEN) & MASK;
    this.state = z;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK;
    return z ^ (z >> 31n);
  }

  /** A number in [0, 1): the top 53 bits of the next draw over 2^53. */
  nextUnit() {
    return Number(this.nextU64() >> 11n) / 2 ** 53;
  }
}

module.exports = { SplitMix64, seedOf };
