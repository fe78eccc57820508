export type { NodeHttpFetchOptions } from './node-http-fetch.ts';
export { createNodeHttpFetch } from './node-http-fetch.ts';
export type { FetchHandler, ServedHandler, ServeOptions } from './serve.ts';
export { serve } from './serve.ts';
export { serveStatic } from './serve-static.ts';
export type { StartedTelemetry, StartTelemetryOptions } from './start-telemetry.ts';
export { startTelemetry } from './start-telemetry.ts';
