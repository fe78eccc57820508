import type { DialectSource } from '../../capture/recording.ts';
import { RequestFailedError } from '../../client/client-errors.ts';
import type { DialectId } from '../../dialects/dialect.ts';
import { dialectForPath, getDialect, isDialectId } from '../../dialects/registry.ts';
import type { FetchLike } from '../../server/upstream/upstream.ts';
import { UsageError } from '../cli-io.ts';
import { probeUpstream, unknownServerProblem } from '../probe-upstream.ts';

export interface Endpoint {
  url: string;
  /** Undefined when neither the path nor a flag says; the client then detects it from the response. */
  dialect: DialectId | undefined;
  dialectSource: DialectSource | undefined;
  model: string | undefined;
  /** What a probe of the server's info routes found, when one was made. */
  server?: string | undefined;
}

export interface ResolveInput {
  url: string;
  dialect?: string | undefined;
  model?: string | undefined;
  headers: Record<string, string>;
  fetch: FetchLike;
  /** Look up a model name when none was given and the dialect needs one. */
  findModel: boolean;
}

/** Dialects whose servers refuse a request without a model name (llama-server and TGI native ignore it). */
const NEEDS_MODEL: ReadonlySet<DialectId> = new Set([
  'openai-chat',
  'openai-completions',
  'ollama-chat',
  'ollama-generate',
  'anthropic-messages',
  'openai-responses',
]);

/**
 * Turns what the user typed into an endpoint: the URL's path names the dialect (`/v1/chat/completions`,
 * `/api/chat`, `/completion`, `/generate_stream`…), `--dialect` overrides it, and a bare server address
 * (`http://host:11434`, or `.../v1`) is probed (Ollama's /api/tags, llama-server's /props, TGI's /info,
 * /v1/models) to pick its chat endpoint. The model, when not given, is the first one the server lists.
 */
export async function resolveEndpoint(input: ResolveInput): Promise<Endpoint> {
  let url: URL;
  try {
    url = new URL(input.url);
  } catch {
    throw new UsageError(`not a URL: ${JSON.stringify(input.url)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError(`only http:// and https:// URLs are supported, got ${url.protocol}//`);
  if (input.dialect !== undefined && !isDialectId(input.dialect))
    throw new UsageError(`unknown dialect ${JSON.stringify(input.dialect)}`);

  const path = url.pathname.replace(/\/+$/, '');
  const bare = path === '' || path === '/v1';
  let dialect: DialectId | undefined;
  let source: DialectSource | undefined;
  let server: string | undefined;
  let models: string[] | undefined;

  if (input.dialect !== undefined) {
    dialect = input.dialect as DialectId;
    source = 'flag';
    if (bare) url = new URL(getDialect(dialect).paths[0]!, url.origin);
  } else {
    const byPath = dialectForPath(path);
    if (byPath !== undefined) {
      dialect = byPath.id;
      source = 'path';
    } else if (bare) {
      const probe = await probeUpstream(url.origin, input.fetch, input.headers, { newDialects: false });
      if (probe.server === 'unknown') {
        const problem = unknownServerProblem(
          url.origin,
          probe,
          'give the endpoint path (e.g. /v1/chat/completions or /api/chat) or --dialect',
        );
        // Not a usage error: the address may be right and the server down (exit 1, as for any request).
        if (problem.connection) throw new RequestFailedError('network', problem.message, { url: url.origin });
        throw new UsageError(problem.message);
      }
      // Ollama's native chat shows Ollama's own behaviour; every other server's chat route is OpenAI's.
      dialect = probe.server === 'ollama' && path === '' ? 'ollama-chat' : 'openai-chat';
      source = 'probe';
      server = probe.server;
      models = probe.models;
      url = new URL(getDialect(dialect).paths[0]!, url.origin);
    }
  }

  let model = input.model;
  if (model === undefined && input.findModel && dialect !== undefined && NEEDS_MODEL.has(dialect)) {
    models ??= (await probeUpstream(url.origin, input.fetch, input.headers, { newDialects: false })).models;
    model = models[0];
  }
  return { url: url.toString(), dialect, dialectSource: source, model, server };
}
