/** `tokenwire/node/redis`: the Redis resume store (loads ioredis, so it is its own subpath). */
export * from './redis-resume-store.ts';
