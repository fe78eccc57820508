/**
 * The simulator's failures a person can pick on the page. Each preset fills in the fault spec (sent as
 * the `x-tokenwire-fault` header; see src/sim/faults.ts) and, where the failure is a client setting
 * rather than a server fault, the max-tokens or idle-timeout field.
 */
export interface FaultPreset {
  id: string;
  label: string;
  /** The `x-tokenwire-fault` spec ('' for none). */
  spec: string;
  /** Max tokens to ask for; undefined leaves the server's default. */
  maxTokens?: number;
  /** The client's idle timeout in ms. */
  idleMs: number;
  /** What the person will see. */
  hint: string;
  /**
   * Read the simulator's own bytes (`/sim/<path>`) rather than the gateway's re-encoding: a wire-level
   * fault only shows there.
   */
  raw?: boolean;
}

/** The client's idle timeout unless a preset says otherwise: generous, for real servers' cold starts. */
export const DEFAULT_IDLE_MS = 30000;

export const FAULT_PRESETS: readonly FaultPreset[] = [
  { id: 'none', label: 'None', spec: '', idleMs: DEFAULT_IDLE_MS, hint: 'A clean stream.' },
  {
    id: 'cut',
    label: 'Cut mid-stream',
    spec: 'cut-after=12',
    idleMs: DEFAULT_IDLE_MS,
    hint: 'The upstream connection breaks after 12 tokens, with no terminal event: the answer is incomplete.',
  },
  {
    id: 'stall',
    label: 'Stall',
    spec: 'stall=4000,stall-after=8',
    idleMs: 2000,
    hint: 'The model goes silent for 4 s after 8 tokens; with a 2 s idle timeout the client gives up.',
  },
  {
    id: 'error',
    label: 'Mid-stream error',
    spec: 'error-after=10',
    idleMs: DEFAULT_IDLE_MS,
    hint: "After 10 tokens the server sends an error event in the dialect's own shape, inside the 200.",
  },
  {
    id: 'split-utf8',
    label: 'Split UTF-8',
    spec: 'split-utf8,multilingual',
    idleMs: DEFAULT_IDLE_MS,
    raw: true,
    hint: 'Every write is split inside multi-byte characters (the answer in every script); a correct client still shows every character.',
  },
  {
    id: 'keepalives',
    label: 'Keepalives',
    spec: 'keepalive=300,stall=3000,stall-after=6',
    idleMs: DEFAULT_IDLE_MS,
    raw: true,
    hint: 'A 3 s pause filled with keepalive comments every 300 ms.',
  },
  {
    id: 'no-done',
    label: 'No terminal event',
    spec: 'no-done',
    idleMs: DEFAULT_IDLE_MS,
    raw: true,
    hint: "The stream ends without [DONE], or without the terminal event in dialects that send no [DONE]. On OpenAI's routes the finish_reason still ends the answer ([DONE] is optional); elsewhere the answer is incomplete.",
  },
  {
    id: 'slow',
    label: 'Slow drip',
    spec: 'tps=3',
    idleMs: DEFAULT_IDLE_MS,
    hint: 'Three tokens a second.',
  },
  {
    id: 'length',
    label: 'Length (output cap)',
    spec: '',
    maxTokens: 12,
    idleMs: DEFAULT_IDLE_MS,
    hint: 'Asks for at most 12 tokens: the answer is cut off by the output limit (finish reason length).',
  },
];

export function findPreset(id: string): FaultPreset | undefined {
  return FAULT_PRESETS.find((preset) => preset.id === id);
}

/** What a preset sets, in words ("Sets fault spec … · Max tokens 12 · Idle timeout 2000 ms"). */
export function presetSummary(preset: FaultPreset): string {
  const parts = [preset.spec === '' ? 'no fault' : `fault spec ${preset.spec}`];
  parts.push(
    preset.maxTokens === undefined ? 'max tokens: server default' : `max tokens ${preset.maxTokens}`,
  );
  parts.push(`idle timeout ${preset.idleMs} ms`);
  parts.push(preset.raw === true ? "reads the simulator's own bytes" : 'through the gateway');
  return `Sets ${parts.join(' · ')}.`;
}
