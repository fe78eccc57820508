import type { DialectId } from '../dialects/dialect.ts';
import { isDialectId } from '../dialects/registry.ts';
import type { FetchLike } from '../server/upstream/upstream.ts';
import { UsageError } from './cli-io.ts';

export interface ProbeResult {
  server: 'ollama' | 'llamacpp' | 'tgi' | 'openai' | 'unknown';
  dialects: DialectId[];
  models: string[];
  /**
   * Set when no probe got an answer because the connection itself failed (refused, host not found,
   * timed out, TLS): what went wrong, in words ("connection refused"). Then the server is `unknown`.
   */
  unreachable?: string | undefined;
  /** What each probe got, in order: what `unknownServerProblem()` explains when the server is unknown. */
  answers: ProbeAnswer[];
}

/** One probe's outcome: an HTTP status (with its content type), or a connection failure in words. */
export interface ProbeAnswer {
  path: string;
  status?: number | undefined;
  contentType?: string | undefined;
  failure?: string | undefined;
}

export interface ProbeOptions {
  /** How long each probe may take (default 3000 ms). */
  timeoutMs?: number | undefined;
  /**
   * Also ask a llama-server or OpenAI-compatible server whether it serves Anthropic Messages and OpenAI
   * Responses (their token-count routes; default true). Off when only the model list is wanted.
   */
  newDialects?: boolean | undefined;
}

/**
 * A failed fetch in words, from the Node error codes in its `cause` chain ("connection refused" for
 * ECONNREFUSED); undefined when it is not a connection failure.
 */
export function connectionFailure(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') {
      const words = CONNECTION_ERRORS[code];
      if (words !== undefined) return words;
      if (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_') || code.includes('CERT'))
        return `TLS failed (${code})`;
    }
    if ((current as { name?: unknown }).name === 'TimeoutError') return 'no answer in time';
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

const CONNECTION_ERRORS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ECONNRESET: 'connection reset',
  ETIMEDOUT: 'connection timed out',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  UND_ERR_SOCKET: 'connection closed before an answer',
  ERR_SSL_WRONG_VERSION_NUMBER: 'TLS failed: the server does not speak TLS there',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'TLS failed: self-signed certificate',
  SELF_SIGNED_CERT_IN_CHAIN: 'TLS failed: self-signed certificate in the chain',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'TLS failed: certificate from an unknown issuer',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'TLS failed: certificate from an unknown issuer',
  CERT_HAS_EXPIRED: 'TLS failed: certificate expired',
  ERR_TLS_CERT_ALTNAME_INVALID: 'TLS failed: the certificate is for another host name',
};

const DEFAULT_PROBE_TIMEOUT_MS = 3000;

/**
 * Finds out what a server is by asking the endpoints only it has: Ollama's /api/tags, llama-server's
 * /props, TGI's /info, then the OpenAI /v1/models every one of them serves. A llama-server (b10108
 * and later) or an OpenAI-compatible server is also asked for its Messages and Responses token counts
 * (`/v1/messages/count_tokens`, `/v1/responses/input_tokens`: no generation), so clients of those
 * dialects are served same-dialect instead of translated through chat.
 */
export async function probeUpstream(
  baseUrl: string,
  fetchFn: FetchLike,
  headers: Record<string, string> = {},
  options: ProbeOptions = {},
): Promise<ProbeResult> {
  const base = baseUrl.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS;
  const answers: ProbeAnswer[] = [];
  let failure: string | undefined;
  const ask = async (path: string, body?: unknown): Promise<unknown> => {
    // The connection failed once: every other probe would fail the same way (and a timeout costs each).
    if (failure !== undefined) return undefined;
    let response: Response;
    try {
      const init: RequestInit = { headers, signal: AbortSignal.timeout(timeoutMs) };
      if (body !== undefined) {
        init.method = 'POST';
        init.headers = { ...headers, 'content-type': 'application/json' };
        init.body = JSON.stringify(body);
      }
      response = await fetchFn(new Request(`${base}${path}`, init));
    } catch (error) {
      const words = connectionFailure(error) ?? (error instanceof Error ? error.message : String(error));
      answers.push({ path, failure: words });
      if (answers.every((answer) => answer.failure !== undefined)) failure = words;
      return undefined;
    }
    const contentType = response.headers.get('content-type') ?? undefined;
    answers.push({ path, status: response.status, contentType });
    if (!response.ok) {
      await response.body?.cancel().catch(() => {});
      return undefined;
    }
    try {
      return await response.json();
    } catch {
      return undefined;
    }
  };
  const get = (path: string) => ask(path);
  const tags = (await get('/api/tags')) as { models?: { name?: string }[] } | undefined;
  if (tags !== undefined && Array.isArray(tags.models)) {
    return {
      server: 'ollama',
      dialects: ['ollama-chat', 'ollama-generate', 'openai-chat', 'openai-completions'],
      models: tags.models.map((m) => m.name ?? '').filter((n) => n !== ''),
      answers,
    };
  }
  const models = await listOpenAiModels(get);
  const props = (await get('/props')) as Record<string, unknown> | undefined;
  if (props !== undefined && ('default_generation_settings' in props || 'total_slots' in props)) {
    // Native /completion before /v1/completions: a bare prompt from another dialect (TGI, Ollama generate)
    // goes where llama-server says which stop string matched, counts the prompt and reads json_schema.
    const dialects: DialectId[] = ['openai-chat', 'llamacpp', 'openai-completions'];
    if (options.newDialects !== false) dialects.push(...(await newDialects(ask, models[0])));
    return { server: 'llamacpp', dialects, models, answers };
  }
  const info = (await get('/info')) as Record<string, unknown> | undefined;
  if (info !== undefined && 'model_id' in info) {
    const id = typeof info.model_id === 'string' ? [info.model_id] : [];
    return {
      server: 'tgi',
      dialects: ['openai-chat', 'openai-completions', 'tgi'],
      models: models.length > 0 ? models : id,
      answers,
    };
  }
  if (models.length > 0) {
    const dialects: DialectId[] = ['openai-chat', 'openai-completions'];
    if (options.newDialects !== false) dialects.push(...(await newDialects(ask, models[0])));
    return { server: 'openai', dialects, models, answers };
  }
  const unknown: ProbeResult = { server: 'unknown', dialects: [], models: [], answers };
  // Nothing answered at all: the connection is the problem, not the kind of server.
  if (failure !== undefined) unknown.unreachable = failure;
  return unknown;
}

/**
 * Messages and Responses, when the server counts tokens for them: a 200 with a numeric `input_tokens`
 * (llama-server b10108: `{"input_tokens":11}` and `{"input_tokens":11,"object":"response.input_tokens"}`).
 * A token count, not a generation: the probe costs the server a tokenization.
 */
async function newDialects(
  ask: (path: string, body?: unknown) => Promise<unknown>,
  model: string | undefined,
): Promise<DialectId[]> {
  const found: DialectId[] = [];
  const counts = (answer: unknown) =>
    typeof answer === 'object' &&
    answer !== null &&
    typeof (answer as { input_tokens?: unknown }).input_tokens === 'number';
  const name = model ?? 'probe';
  if (
    counts(
      await ask('/v1/messages/count_tokens', { model: name, messages: [{ role: 'user', content: 'hi' }] }),
    )
  )
    found.push('anthropic-messages');
  if (counts(await ask('/v1/responses/input_tokens', { model: name, input: 'hi' })))
    found.push('openai-responses');
  return found;
}

/** The probes that tell the kind of server (the new-dialect ones only add to a known server). */
const KIND_PROBES = ['/api/tags', '/v1/models', '/props', '/info'];

/**
 * Why a probe could not tell what a server is, and what to do, in one sentence for a person:
 * the connection (refused, timed out, TLS), credentials (401/403), a web page (HTML), or nothing known
 * (404 on every probe). `otherwise` is the command's own way out ("pass --upstream-dialect").
 * `connection` is true when the server was never reached (not a usage error: exit 1).
 */
export function unknownServerProblem(
  origin: string,
  probe: ProbeResult,
  otherwise: string,
): { message: string; connection: boolean } {
  const at = `could not tell what server ${origin} is`;
  if (probe.unreachable !== undefined) {
    const words = probe.unreachable;
    let todo: string;
    if (words === 'connection refused')
      todo = 'nothing listens on that port: start the server, or check the host and port of the URL';
    else if (words === 'host not found') todo = 'check the host name in the URL';
    else if (words === 'no answer in time' || words === 'connection timed out')
      todo = 'check the address and any firewall; a server still loading its model may answer later';
    else if (words.includes('does not speak TLS')) todo = 'use http:// if the server speaks plain HTTP';
    else if (words.startsWith('TLS failed'))
      todo = 'trust its certificate authority with NODE_EXTRA_CA_CERTS=ca.pem, or check the host name';
    else todo = 'check that the server is up and the URL is right';
    return { message: `cannot reach ${origin}: ${words}; ${todo}`, connection: true };
  }
  const kind = probe.answers.filter((answer) => KIND_PROBES.includes(answer.path));
  const list = (answers: ProbeAnswer[]) =>
    answers.map((answer) => `${answer.path} ${answer.status ?? answer.failure}`).join(', ');
  const denied = kind.filter((answer) => answer.status === 401 || answer.status === 403);
  if (denied.length > 0) {
    return {
      message:
        `${at}: it refused the probes (${list(denied)}), so it needs credentials; ` +
        "pass them with --upstream-header 'Authorization: Bearer KEY' (or the header it asks for)",
      connection: false,
    };
  }
  const html = kind.filter((answer) => answer.contentType?.toLowerCase().includes('text/html') === true);
  if (html.length > 0) {
    return {
      message:
        `${at}: it answered with an HTML page (${list(html)}), not a model server's JSON; ` +
        `check the port and any path prefix of a proxy in front of it, or ${otherwise}`,
      connection: false,
    };
  }
  if (kind.length > 0 && kind.every((answer) => answer.status === 404)) {
    return {
      message:
        `${at}: every probe got 404 (${kind.map((answer) => answer.path).join(', ')}), so it is not Ollama, ` +
        `llama-server, TGI or an OpenAI-compatible server at this address; check the URL, or ${otherwise}`,
      connection: false,
    };
  }
  return {
    message: `${at} (the probes got: ${list(kind)}); ${otherwise}`,
    connection: false,
  };
}

async function listOpenAiModels(get: (path: string) => Promise<unknown>): Promise<string[]> {
  const list = (await get('/v1/models')) as { data?: { id?: string }[] } | undefined;
  if (list === undefined || !Array.isArray(list.data)) return [];
  return list.data.map((m) => m.id ?? '').filter((id) => id !== '');
}

/** `--upstream-dialect a,b` -> dialect ids, refusing unknown ones. */
export function parseDialectList(value: string): DialectId[] {
  const ids = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const id of ids) {
    if (!isDialectId(id)) throw new UsageError(`unknown dialect ${JSON.stringify(id)}`);
  }
  return ids as DialectId[];
}
