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
