/**
 * Headers for the responses that only tokenwire's own code reads on the per-request path: the gateway's
 * direct-only responses to `serve()` and the upstream fetch's answers to a push reader
 * (node/undici-fetch.ts). Unlike undici's Headers it does not validate names and values: they are this
 * code's own, or ones the HTTP parser has already parsed. Names are lowercased; values are taken as
 * given. Iteration is in sorted name order with each `set-cookie` value on its own, as Headers iterates
 * (property-tested against Headers).
 * Shape kept for speed: bench/README.md "Why the code is shaped as it is" (LightHeaders).
 */
export class LightHeaders implements Headers {
  /** Lowercase name -> value (a Map: any name, `__proto__` included, is just a name). */
  readonly #values = new Map<string, string>();
  /** The names in `#values`, kept sorted as they come and go: iteration needs no sort. */
  readonly #names: string[] = [];
  #cookies: string[] | undefined;
  /**
   * The raw pairs given to fromRaw, read in place by `get` and `has`, the only calls a reader of an
   * upstream response makes (its content type): anything else first turns them into the map.
   */
  #raw: readonly string[] | undefined;

  constructor(init?: Record<string, string> | Iterable<readonly [string, string]>) {
    if (init === undefined) return;
    if (isPairs(init)) {
      for (const [name, value] of init) this.append(name, value);
    } else {
      for (const name in init) this.append(name, init[name]!);
    }
  }

  /** From raw header strings (name, value, name, value…, as HTTP parsers give them): repeated names are combined. */
  static fromRaw(raw: readonly string[]): LightHeaders {
    const headers = new LightHeaders();
    headers.#raw = raw;
    return headers;
  }

  #materialize(): void {
    const raw = this.#raw;
    if (raw === undefined) return;
    this.#raw = undefined;
    for (let i = 0; i + 1 < raw.length; i += 2) this.append(raw[i]!, raw[i + 1]!);
  }

  append(name: string, value: string): void {
    this.#materialize();
    const key = name.toLowerCase();
    if (key === 'set-cookie') {
      this.#cookies ??= [];
      this.#cookies.push(value);
      return;
    }
    const existing = this.#values.get(key);
    if (existing === undefined) this.#add(key, value);
    else this.#values.set(key, `${existing}, ${value}`);
  }

  set(name: string, value: string): void {
    this.#materialize();
    const key = name.toLowerCase();
    if (key === 'set-cookie') this.#cookies = [value];
    else this.#add(key, value);
  }

  delete(name: string): void {
    this.#materialize();
    const key = name.toLowerCase();
    if (key === 'set-cookie') this.#cookies = undefined;
    else if (this.#values.delete(key)) this.#names.splice(this.#names.indexOf(key), 1);
  }

  get(name: string): string | null {
    const key = name.toLowerCase();
    const raw = this.#raw;
    if (raw !== undefined) {
      // Repeated names combine as `append` does (set-cookie values included, as Headers' `get` does).
      let found: string | null = null;
      for (let i = 0; i + 1 < raw.length; i += 2) {
        if (raw[i]!.toLowerCase() === key) found = found === null ? raw[i + 1]! : `${found}, ${raw[i + 1]}`;
      }
      return found;
    }
    if (key === 'set-cookie') return this.#cookies === undefined ? null : this.#cookies.join(', ');
    return this.#values.get(key) ?? null;
  }

  has(name: string): boolean {
    return this.get(name) !== null;
  }

  getSetCookie(): string[] {
    this.#materialize();
    return this.#cookies === undefined ? [] : [...this.#cookies];
  }

  entries(): ReturnType<Headers['entries']> {
    return this.#pairs()[Symbol.iterator]() as unknown as ReturnType<Headers['entries']>;
  }

  keys(): ReturnType<Headers['keys']> {
    return this.#pairs()
      .map(([key]) => key)
      [Symbol.iterator]() as unknown as ReturnType<Headers['keys']>;
  }

  values(): ReturnType<Headers['values']> {
    return this.#pairs()
      .map(([, value]) => value)
      [Symbol.iterator]() as unknown as ReturnType<Headers['values']>;
  }

  [Symbol.iterator](): ReturnType<Headers['entries']> {
    return this.entries();
  }

  forEach(callback: (value: string, key: string, parent: Headers) => void, thisArg?: unknown): void {
    this.#materialize();
    let cookiesDone = this.#cookies === undefined;
    for (const key of this.#names) {
      if (!cookiesDone && key > 'set-cookie') {
        cookiesDone = true;
        for (const cookie of this.#cookies!) callback.call(thisArg, cookie, 'set-cookie', this);
      }
      callback.call(thisArg, this.#values.get(key)!, key, this);
    }
    if (!cookiesDone) for (const cookie of this.#cookies!) callback.call(thisArg, cookie, 'set-cookie', this);
  }

  #add(key: string, value: string): void {
    if (!this.#values.has(key)) {
      let at = this.#names.length;
      while (at > 0 && this.#names[at - 1]! > key) at -= 1;
      this.#names.splice(at, 0, key);
    }
    this.#values.set(key, value);
  }

  #pairs(): [string, string][] {
    const pairs: [string, string][] = [];
    this.forEach((value, key) => {
      pairs.push([key, value]);
    });
    return pairs;
  }
}

function isPairs(
  init: Record<string, string> | Iterable<readonly [string, string]>,
): init is Iterable<readonly [string, string]> {
  return typeof (init as Partial<Iterable<unknown>>)[Symbol.iterator] === 'function';
}

/** What a light response is built from. */
export interface LightResponseInit {
  status: number;
  statusText: string;
  headers: LightHeaders;
  url?: string | undefined;
}

/**
 * A stand-in for a Response whose body is read another way: `body` null and `carrier` set to `value` (a
 * direct writer, a push source). For readers in this code only, which read `status`, `statusText`, `ok`,
 * `url` and `headers`.
 * Shape kept for speed: bench/README.md "Why the code is shaped as it is" (LightHeaders).
 */
export function lightResponse(init: LightResponseInit, carrier: symbol, value: unknown): Response {
  const response = {
    status: init.status,
    statusText: init.statusText,
    ok: init.status >= 200 && init.status < 300,
    url: init.url ?? '',
    redirected: false,
    type: 'basic',
    headers: init.headers,
    body: null,
    bodyUsed: false,
    [carrier]: value,
  };
  return response as unknown as Response;
}
