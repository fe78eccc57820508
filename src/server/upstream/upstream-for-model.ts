import type { DialectId } from '../../dialects/dialect.ts';
import { listsModel, servesAnyModelName } from '../../dialects/model-not-found.ts';
import type { Upstream } from './upstream.ts';

/**
 * The upstream that serves `model` for a client of `client`'s dialect, or undefined when none does (the
 * gateway then answers the client's server's "model not found"):
 * - no model named (TGI, llama-server): the first upstream;
 * - the first upstream that lists it (`listsModel`: `@` suffixes and Ollama's `:latest` tag included);
 * - a client dialect whose server ignores names (llama-server's `/completion`, TGI): the first upstream;
 * - else the first upstream that takes any name: one with no model list, or `anyModelName`.
 */
export function upstreamForModel(
  upstreams: readonly Upstream[],
  model: string | undefined,
  client: DialectId,
): Upstream | undefined {
  if (model === undefined) return upstreams[0];
  const listing = upstreamListing(upstreams, model);
  if (listing !== undefined) return listing;
  if (servesAnyModelName(client)) return upstreams[0];
  return upstreams.find((u) => u.anyModelName === true || u.models === undefined || u.models.length === 0);
}

/** The first upstream that lists `model` (`listsModel`: `@` suffixes and Ollama's `:latest` included). */
export function upstreamListing(upstreams: readonly Upstream[], model: string): Upstream | undefined {
  return upstreams.find((u) => u.models !== undefined && listsModel(u.models, model));
}

/**
 * The upstream for a side route or a token count naming `model`: the one that lists it, else the first
 * (those routes answer "model not found" themselves where their server would).
 */
export function pickUpstream(upstreams: readonly Upstream[], model: string | undefined): Upstream {
  return (model === undefined ? undefined : upstreamListing(upstreams, model)) ?? upstreams[0]!;
}
