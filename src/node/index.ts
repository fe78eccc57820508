export type { FetchHandler, ServedHandler, ServeOptions } from './serve.ts';
export { serve } from './serve.ts';
