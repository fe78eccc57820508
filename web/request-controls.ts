/**
 * The request bar and its Settings panel: the model (from the gateway's own list), the output dialect,
 * the failure presets and fault spec, max tokens, the idle timeout, "Simulator's own bytes", and the
 * settings (system prompt, sampling, extra JSON, API key, tool, reasoning). It turns them into what a
 * request needs; the conversation adds the turns.
 */
import { DIALECT_IDS, type DialectId } from '../src/dialects/dialect.ts';
import { getDialect } from '../src/dialects/registry.ts';
import { fieldRow } from '../src/dialects/request-field-table.ts';
import type { ChatRequest, ToolDefinition } from '../src/events/chat-request.ts';
import { FAULTS } from '../src/sim/faults.ts';
import { byId } from './by-id.ts';
import { describeFaults, wireLevelFaults } from './describe-faults.ts';
import { DEFAULT_IDLE_MS, FAULT_PRESETS, findPreset, presetSummary } from './fault-presets.ts';
import { modelNames, pickModel } from './model-choice.ts';
import { parseExtraJson, SAMPLING_SETTINGS, wireName } from './sampling-fields.ts';

/** The fault header the gateway forwards to the simulator. */
const FAULT_HEADER = 'x-tokenwire-fault';
/** Where the gateway mounts the simulator's own endpoints (src/sim/sim-raw-route.ts). */
export const SIM_PREFIX = 'sim/';

/** The tool "Offer a tool" adds. */
const WEATHER_TOOL: ToolDefinition = {
  name: 'get_weather',
  description: 'The current weather in a city',
  parameters: {
    type: 'object',
    properties: {
      city: { type: 'string', description: 'The city' },
      unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
    },
    required: ['city'],
  },
};

const modelSelect = byId<HTMLSelectElement>('model');
const dialectSelect = byId<HTMLSelectElement>('dialect');
const dialectHint = byId<HTMLParagraphElement>('dialect-hint');
const maxTokensInput = byId<HTMLInputElement>('max-tokens');
const idleInput = byId<HTMLInputElement>('idle-ms');
const temperatureInput = byId<HTMLInputElement>('temperature');
const topPInput = byId<HTMLInputElement>('top-p');
const seedInput = byId<HTMLInputElement>('seed');
const stopInput = byId<HTMLInputElement>('stop-strings');
const extraInput = byId<HTMLTextAreaElement>('extra-json');
const extraError = byId<HTMLParagraphElement>('extra-error');
const apiKeyInput = byId<HTMLInputElement>('api-key');
const toolInput = byId<HTMLInputElement>('offer-tool');
const reasoningInput = byId<HTMLInputElement>('want-reasoning');
const rawInput = byId<HTMLInputElement>('raw-sim');
const rawHint = byId<HTMLParagraphElement>('raw-hint');
const presetSelect = byId<HTMLSelectElement>('fault-preset');
const specInput = byId<HTMLInputElement>('fault-spec');
const faultHint = byId<HTMLParagraphElement>('fault-hint');
const presetSets = byId<HTMLParagraphElement>('preset-sets');
const faultError = byId<HTMLParagraphElement>('fault-error');
const faultList = byId<HTMLDListElement>('fault-list');
const imageInput = byId<HTMLInputElement>('image');
const gatewayInfo = byId<HTMLParagraphElement>('gateway-info');
const settings = byId<HTMLDetailsElement>('settings');

/** Whether the gateway serves the simulator's own bytes at /sim/. */
let simRawAvailable = false;
/** The model a restored conversation used: picked when the gateway's list holds it. */
let preferredModel: string | undefined;

/** Fills the bar (dialects, presets, the fault table), wires its events, asks the gateway what it serves. */
export function initControls(): Promise<void> {
  // Every dialect in the registry (new ones appear here as they are registered).
  for (const id of DIALECT_IDS) dialectSelect.append(new Option(id, id));
  for (const preset of FAULT_PRESETS) presetSelect.append(new Option(preset.label, preset.id));
  presetSelect.append(new Option('Custom', 'custom'));
  applyPreset('none');
  for (const fault of FAULTS) {
    const term = document.createElement('dt');
    const code = document.createElement('code');
    code.textContent = fault.value === undefined ? fault.name : `${fault.name}=${fault.value}`;
    term.append(code);
    const description = document.createElement('dd');
    description.textContent = fault.description;
    faultList.append(term, description);
  }
  dialectSelect.addEventListener('change', onDialectChange);
  rawInput.addEventListener('change', showEndpoint);
  presetSelect.addEventListener('change', () => applyPreset(presetSelect.value));
  specInput.addEventListener('input', () => {
    const preset = findPreset(presetSelect.value);
    if (preset !== undefined && preset.spec !== specInput.value.trim()) presetSelect.value = 'custom';
    checkSpec();
  });
  extraInput.addEventListener('input', () => checkExtra());
  apiKeyInput.addEventListener('change', () => void loadModels());
  onDialectChange();
  return Promise.all([loadModels(), detectSimRaw()]).then(() => undefined);
}

/** The output dialect picked. */
export function selectedDialect(): DialectId {
  return getDialect(dialectSelect.value).id;
}

export function setDialect(id: string): void {
  if (!DIALECT_IDS.includes(id as DialectId)) return;
  dialectSelect.value = id;
  onDialectChange();
}

/** The model picked ('' when the gateway listed none: the server's default). */
export function selectedModel(): string {
  return modelSelect.value;
}

/** Selects `model` when the gateway serves it (a saved conversation's model), now or once the list is in. */
export function setModel(model: string | undefined): void {
  preferredModel = model;
  const served = [...modelSelect.options].map((option) => option.value);
  if (model !== undefined && served.includes(model)) modelSelect.value = model;
}

export function systemPrompt(): string {
  return byId<HTMLTextAreaElement>('system-prompt').value.trim();
}

export function setSystemPrompt(text: string): void {
  byId<HTMLTextAreaElement>('system-prompt').value = text;
}

/** What a request needs besides its turns; undefined (with a message by the field at fault) when a field is invalid. */
export interface RequestSettings {
  /** The request without `messages`. */
  request: ChatRequest;
  headers: Record<string, string>;
  idleMs: number;
  /** Read the simulator's own bytes (`/sim/<path>`). */
  raw: boolean;
}

export function requestSettings(): RequestSettings | undefined {
  const spec = checkSpec();
  if (spec === undefined) {
    specInput.focus();
    return undefined;
  }
  const extra = checkExtra();
  if (extra === false) {
    settings.open = true;
    extraInput.focus();
    return undefined;
  }
  const request: ChatRequest = { includeUsage: true };
  const model = selectedModel();
  if (model !== '') request.model = model;
  const maxTokens = wholeNumber(maxTokensInput.value);
  if (maxTokens !== undefined && maxTokens > 0) request.maxTokens = maxTokens;
  const temperature = decimal(temperatureInput.value);
  if (temperature !== undefined) request.temperature = temperature;
  const topP = decimal(topPInput.value);
  if (topP !== undefined) request.topP = topP;
  const seed = wholeNumber(seedInput.value);
  if (seed !== undefined) request.seed = seed;
  // Written by the dialect's request mapping where the request field table puts them; a setting the
  // dialect has no field for is disabled (onDialectChange), so nothing is dropped unseen.
  for (const setting of SAMPLING_SETTINGS) {
    const input = byId<HTMLInputElement>(setting.id);
    if (input.disabled) continue;
    const value = setting.whole ? wholeNumber(input.value) : decimal(input.value);
    if (value !== undefined) request[setting.field] = value;
  }
  if (extra !== undefined) request.extra = extra;
  const stops = stopInput.value
    .split(',')
    .map((stop) => stop.trim())
    .filter((stop) => stop !== '');
  if (stops.length > 0) request.stop = stops;
  if (toolInput.checked) request.tools = [WEATHER_TOOL];
  // An effort, which every dialect maps (OpenAI's reasoning_effort, Ollama's think).
  if (reasoningInput.checked) request.reasoning = 'medium';
  const headers = authHeaders();
  if (spec !== '') headers[FAULT_HEADER] = spec;
  return {
    request,
    headers,
    idleMs: wholeNumber(idleInput.value) ?? DEFAULT_IDLE_MS,
    raw: rawInput.checked && simRawAvailable,
  };
}

/** The extra JSON as `extra`; false (and a message by the field) when it is not usable. */
function checkExtra(): Record<string, unknown> | undefined | false {
  const parsed = parseExtraJson(extraInput.value, selectedDialect());
  if ('error' in parsed) {
    extraError.textContent = `Extra JSON: ${parsed.error}`;
    extraError.hidden = false;
    extraInput.setAttribute('aria-invalid', 'true');
    return false;
  }
  extraError.hidden = true;
  extraInput.removeAttribute('aria-invalid');
  return parsed.extra;
}

function onDialectChange(): void {
  const dialect = selectedDialect();
  showEndpoint();
  // The image picker and the sampling settings follow the request field table's cells for the dialect.
  const takesImages = typeof fieldRow('images')?.wire[dialect] === 'string';
  imageInput.disabled = !takesImages;
  if (!takesImages) imageInput.value = '';
  for (const setting of SAMPLING_SETTINGS) {
    const input = byId<HTMLInputElement>(setting.id);
    const hint = byId<HTMLElement>(`${setting.id}-hint`);
    const name = wireName(setting.field, dialect);
    input.disabled = name === undefined;
    hint.textContent = name === undefined ? `${dialect} has no such field` : `sent as ${name}`;
  }
  if (extraInput.value.trim() !== '') checkExtra();
}

export function showEndpoint(): void {
  const dialect = getDialect(dialectSelect.value);
  const framing = dialect.framing === 'sse' ? 'SSE' : 'NDJSON';
  const raw = rawInput.checked && simRawAvailable;
  dialectHint.textContent = raw
    ? `The page calls POST /${SIM_PREFIX}${dialect.paths[0]!.slice(1)}: the simulator's own bytes (${framing}).`
    : `The page calls POST ${dialect.paths[0]} on this gateway (${framing}).`;
  rawHint.textContent = simRawAvailable
    ? raw
      ? "Reading the simulator's own bytes: wire-level faults (splits, keepalives, a missing [DONE]) arrive as written."
      : 'Through the gateway: it decodes and re-encodes, so wire-level faults do not reach the page.'
    : 'The gateway fronts a real upstream: there is no simulator to read.';
}

function applyPreset(id: string): void {
  const preset = findPreset(id);
  if (preset === undefined) return;
  presetSelect.value = preset.id;
  specInput.value = preset.spec;
  maxTokensInput.value = preset.maxTokens === undefined ? '' : String(preset.maxTokens);
  idleInput.value = String(preset.idleMs);
  if (simRawAvailable) rawInput.checked = preset.raw === true;
  faultHint.textContent = preset.hint;
  presetSets.textContent = presetSummary(preset);
  showEndpoint();
  checkSpec();
}

/** The fault spec when valid ('' for none); undefined (and a message by the field) when not. */
function checkSpec(): string | undefined {
  const spec = specInput.value.trim();
  try {
    // The simulator's own parser: the page rejects what the simulator would.
    const described = describeFaults(spec);
    if (/[^\u0020-\u007e]/.test(spec))
      throw new TypeError('use ASCII characters only (it travels in a header)');
    faultError.hidden = true;
    specInput.removeAttribute('aria-invalid');
    if (presetSelect.value === 'custom') {
      const wireOnly = wireLevelFaults(spec);
      faultHint.textContent =
        described === ''
          ? 'No fault: a clean stream.'
          : `${described}.${wireOnly.length > 0 && !rawInput.checked ? ` (${wireOnly.join(', ')} only show with "Simulator's own bytes".)` : ''}`;
      presetSets.textContent = '';
    }
    return spec;
  } catch (error) {
    faultError.textContent = error instanceof Error ? error.message : String(error);
    faultError.hidden = false;
    specInput.setAttribute('aria-invalid', 'true');
    return undefined;
  }
}

/** The Authorization header when an API key was given. */
export function authHeaders(): Record<string, string> {
  const key = apiKeyInput.value.trim();
  return key === '' ? {} : { authorization: `Bearer ${key}` };
}

/** Headers for a capture: no credentials. */
export function redact(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers))
    out[name] = name === 'authorization' ? '[redacted]' : value;
  return out;
}

function wholeNumber(value: string): number | undefined {
  const trimmed = value.trim();
  if (!/^\d+$/.test(trimmed)) return undefined;
  return Number(trimmed);
}

function decimal(value: string): number | undefined {
  const trimmed = value.trim();
  if (trimmed === '' || !Number.isFinite(Number(trimmed))) return undefined;
  return Number(trimmed);
}

/**
 * The models the gateway serves, from its `/v1/models` (or `/api/tags` when that fails): the select
 * offers them all and picks the one already chosen when served, else the first. A page in front of a
 * real server thus never sends a name the server does not have.
 */
async function loadModels(): Promise<void> {
  let names: string[] = [];
  for (const path of ['v1/models', 'api/tags']) {
    try {
      const response = await fetch(new URL(path, window.location.href), { headers: authHeaders() });
      if (!response.ok) continue;
      names = modelNames(await response.json());
    } catch {
      // The next list, or none.
    }
    if (names.length > 0) break;
  }
  const chosen = pickModel(
    names,
    preferredModel ?? (modelSelect.value === '' ? undefined : modelSelect.value),
  );
  if (names.length === 0) {
    // No list: the request names no model and the server answers with its default.
    modelSelect.replaceChildren(new Option("the server's default", ''));
    gatewayInfo.textContent = `Gateway at ${window.location.host} · it listed no models`;
  } else {
    modelSelect.replaceChildren(...names.map((name) => new Option(name, name)));
    modelSelect.value = chosen ?? names[0]!;
    gatewayInfo.textContent = `Gateway at ${window.location.host} · models: ${names.join(', ')}`;
  }
  document.body.dataset.models = String(names.length);
}

/** Whether the gateway mounts the simulator's own endpoints (only when the simulator is its upstream). */
async function detectSimRaw(): Promise<void> {
  try {
    const response = await fetch(new URL(`${SIM_PREFIX}v1/models`, window.location.href), {
      headers: authHeaders(),
    });
    simRawAvailable = response.ok;
  } catch {
    simRawAvailable = false;
  }
  rawInput.disabled = !simRawAvailable;
  if (simRawAvailable) rawInput.checked = findPreset(presetSelect.value)?.raw === true;
  showEndpoint();
}
