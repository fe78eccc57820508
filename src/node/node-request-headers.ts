import type { IncomingHttpHeaders } from 'node:http';
import type { IncomingHeaders } from '../server/http/incoming-request.ts';

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

/** The last Host value found valid: requests on a connection, and most clients, repeat the same one. */
let validHost = '';

/**
 * What makes a request's `Host` header a 400 (RFC 9112 §3.2), else undefined: more than one `Host`
 * line, or a value no URL can be made of — a port past 65535, an IPv4-looking name that is no address
 * (`127.0.0.1:99999`, `999.0.0.1`: the URL parser refuses them, which was a 500 "Invalid URL" wherever a
 * handler parsed the URL). Read from the raw header lines: node:http keeps only the first
 * `Host` in `req.headers`. A missing or empty `Host` is the caller's to judge (HTTP/1.0).
 */
export function hostHeaderProblem(rawHeaders: readonly string[]): string | undefined {
  let host: string | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length !== 4 || name.toLowerCase() !== 'host') continue;
    if (host !== undefined) return 'more than one Host header: a request has exactly one (RFC 9112 §3.2)';
    host = rawHeaders[i + 1]!;
  }
  if (host === undefined || host === '' || host === validHost) return undefined;
  if (!URL.canParse(`http://${host}/`))
    return `invalid Host header ${JSON.stringify(host.slice(0, 100))}: it must be a host name or address with an optional port from 0 to 65535`;
  validHost = host;
  return undefined;
}
