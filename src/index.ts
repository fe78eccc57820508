/**
 * tokenwire: one streaming client for vLLM, llama-server, TGI and Ollama, in every dialect they speak.
 * This entry runs in Node and in browsers (no node:* imports). The gateway, simulator and Node server
 * adapter are on the `tokenwire/server`, `tokenwire/sim` and `tokenwire/node` subpaths.
 */
export * from './client/index.ts';
export type { DialectId } from './dialects/dialect.ts';
export { DIALECT_IDS } from './dialects/dialect.ts';
export { detectDialect, dialectForPath, getDialect } from './dialects/registry.ts';
export { snippet, TokenwireError } from './errors.ts';
export * from './events/index.ts';
