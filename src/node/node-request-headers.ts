import type { IncomingHttpHeaders } from 'node:http';
import type { IncomingHeaders } from '../server/incoming-request.ts';

/**
 * A request's headers as node:http parsed them (names lower-case), read through the part of `Headers`
 * the gateway uses, without building a `Headers`. Repeated headers read as node:http joins them: lists
 * joined with ", ", and only the first of a single-valued header such as Authorization or Content-Type.
 */
export class NodeRequestHeaders implements IncomingHeaders {
  readonly #raw: IncomingHttpHeaders;

  constructor(raw: IncomingHttpHeaders) {
    this.#raw = raw;
  }

  get(name: string): string | null {
    const value = this.#raw[name.toLowerCase()];
    if (value === undefined) return null;
    return typeof value === 'string' ? value : value.join(', ');
  }

  has(name: string): boolean {
    return this.#raw[name.toLowerCase()] !== undefined;
  }

  keys(): Iterable<string> {
    return Object.keys(this.#raw);
  }
}
