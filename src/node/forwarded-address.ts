/** The longest address taken from `X-Forwarded-For` (an IPv6 address with a zone is under 64). */
const MAX_ADDRESS_LENGTH = 64;

/** An IPv4 peer on a dual-stack socket is `::ffff:a.b.c.d`: the same peer as `a.b.c.d`. */
function plain(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

/**
 * The client's address: the socket's peer, unless that peer is one of the `trusted` proxies — then the
 * nearest address in `X-Forwarded-For` that is not a trusted proxy itself, read from the right (each
 * proxy appends the peer it saw, so the entries left of the first untrusted one are the client's own
 * claims and are never read). Without trusted proxies the header is ignored: a client could write anything
 * there.
 */
export function forwardedClientAddress(
  socketAddress: string | undefined,
  forwardedFor: string | string[] | undefined,
  trusted: ReadonlySet<string>,
): string | undefined {
  if (socketAddress === undefined || trusted.size === 0) return socketAddress;
  if (!trusted.has(plain(socketAddress))) return socketAddress;
  const header = Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor;
  if (header === undefined) return socketAddress;
  const hops = header.split(',');
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = plain(hops[i]!.trim());
    if (hop === '' || hop.length > MAX_ADDRESS_LENGTH) return socketAddress;
    if (!trusted.has(hop)) return hop;
  }
  return socketAddress;
}

/** The trusted proxies as compared: `::ffff:` IPv4 forms folded into plain IPv4. */
export function trustedProxySet(addresses: readonly string[] | undefined): ReadonlySet<string> {
  return new Set((addresses ?? []).map((address) => plain(address.trim())).filter((a) => a !== ''));
}
