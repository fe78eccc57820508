import { listsModel } from '../../dialects/model-not-found.ts';
import type { Upstream } from './upstream.ts';

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
