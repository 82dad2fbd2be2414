// ESM entry of seawall/opossum: the same CircuitBreaker class as the CommonJS
// entry (`import CircuitBreaker from 'seawall/opossum'`, as opossum's own).
import CircuitBreaker from './opossum.js';

export default CircuitBreaker;
