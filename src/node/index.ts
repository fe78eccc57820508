export type { FetchHandler, ServedHandler, ServeOptions } from './serve.ts';
export { serve } from './serve.ts';
export { serveStatic } from './serve-static.ts';
export type { StartedTelemetry, StartTelemetryOptions } from './start-telemetry.ts';
export { startTelemetry } from './start-telemetry.ts';
export type { UndiciFetchOptions } from './undici-fetch.ts';
export { createUndiciFetch } from './undici-fetch.ts';
