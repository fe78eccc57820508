import type { IncomingRequest } from './incoming-request.ts';

/**
 * Who sent a request, as the layers in front of the gateway established it: never read from anything
 * a client sends (a symbol property cannot come over HTTP). The guard sets `owner` once the API key
 * checked out; the server adapter (node/serve.ts) sets `address`, the peer's IP.
 */
export interface ClientIdentity {
  /** Hex SHA-256 of the API key the request presented and the guard accepted. */
  owner?: string | undefined;
  /** The peer's address as the socket saw it (a proxy's, behind one). */
  address?: string | undefined;
}

const CLIENT_IDENTITY: unique symbol = Symbol.for('tokenwire.client-identity') as never;

type Holder = { [CLIENT_IDENTITY]?: ClientIdentity };

/** What the layers in front said about the request's sender (empty when nothing did). */
export function clientIdentityOf(request: IncomingRequest): ClientIdentity {
  return (request as unknown as Holder)[CLIENT_IDENTITY] ?? {};
}

/** Records the accepted API key's digest on the request (the guard, after the key check). */
export function setClientOwner(request: IncomingRequest, digest: Uint8Array): void {
  identity(request).owner = hex(digest);
}

/** Records the peer's address on the request (a server adapter). */
export function setClientAddress(request: object, address: string | undefined): void {
  if (address !== undefined) identity(request as IncomingRequest).address = address;
}

/** The bucket a stream counts in for the resume store's per-client bound. */
export function clientBucket(identity: ClientIdentity): string | undefined {
  if (identity.owner !== undefined) return `key:${identity.owner}`;
  return identity.address === undefined ? undefined : `ip:${identity.address}`;
}

/**
 * The address block a per-client bucket belongs to: without API keys a client is an
 * address, and one host can rotate through many of them (a /24 of IPv4 or a /64 of IPv6 is routinely
 * one site's), so the store's bounds weigh blocks before addresses. `ip:10.1.2.3` -> `ip:10.1.2.0/24`,
 * `ip:2001:db8:0:1::5` -> `ip:2001:db8:0:1::/64` (IPv4-mapped IPv6 counts as IPv4). Any other bucket
 * (an API key's, or '' for no known client) is its own block.
 */
export function clientBlock(bucket: string): string {
  if (!bucket.startsWith('ip:')) return bucket;
  let address = bucket.slice(3);
  const zone = address.indexOf('%');
  if (zone >= 0) address = address.slice(0, zone);
  if (address.toLowerCase().startsWith('::ffff:') && address.includes('.')) address = address.slice(7);
  if (/^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(address))
    return `ip:${address.slice(0, address.lastIndexOf('.'))}.0/24`;
  const groups = ipv6Groups(address);
  if (groups === undefined) return bucket;
  return `ip:${groups.slice(0, 4).join(':')}::/64`;
}

/** The eight groups of an IPv6 address (lower-case, no leading zeros), or undefined if it is none. */
function ipv6Groups(address: string): string[] | undefined {
  if (!address.includes(':')) return undefined;
  const halves = address.toLowerCase().split('::');
  if (halves.length > 2) return undefined;
  const split = (part: string) => (part === '' ? [] : part.split(':'));
  const head = split(halves[0]!);
  const tail = halves.length === 2 ? split(halves[1]!) : [];
  // An embedded IPv4 tail (`::1.2.3.4`) is two groups.
  const last = tail.length > 0 ? tail : head;
  if (last.length > 0 && last.at(-1)!.includes('.')) {
    const octets = last.pop()!.split('.').map(Number);
    if (octets.length !== 4 || octets.some((o) => !(o >= 0 && o <= 255))) return undefined;
    last.push(((octets[0]! << 8) | octets[1]!).toString(16), ((octets[2]! << 8) | octets[3]!).toString(16));
  }
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const groups = [...head, ...Array.from({ length: halves.length === 2 ? missing : 0 }, () => '0'), ...tail];
  if (!groups.every((g) => /^[0-9a-f]{1,4}$/.test(g))) return undefined;
  return groups.map((g) => Number.parseInt(g, 16).toString(16));
}

function identity(request: IncomingRequest): ClientIdentity {
  const holder = request as unknown as Holder;
  holder[CLIENT_IDENTITY] ??= {};
  return holder[CLIENT_IDENTITY];
}

function hex(bytes: Uint8Array): string {
  let text = '';
  for (const byte of bytes) text += byte.toString(16).padStart(2, '0');
  return text;
}
