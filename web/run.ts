import type { Recording } from '../src/capture/recording.ts';
import type { DialectId } from '../src/dialects/dialect.ts';
import type { Usage } from '../src/events/usage.ts';
import type { ReadViewer } from './wire-reads.ts';

/** One tool call as it assembles. */
export interface ToolView {
  readonly args: Text;
  readonly parsed: HTMLPreElement;
}

/** One request in flight (or one capture replaying): what the answer and the wire views draw from. */
export interface Run {
  readonly controller: AbortController;
  readonly startedAt: number;
  /** The dialect asked for; undefined when the client detects it (a loaded body). */
  readonly dialect: DialectId | undefined;
  /** The conversation turn this run answers; undefined for a replayed capture. */
  readonly prompt: string | undefined;
  firstContentAt: number | undefined;
  /** Events carrying text, reasoning or tool-call fragments: the live chunk count and token estimate. */
  contentEvents: number;
  frames: number;
  lastFrameData: string | undefined;
  keepalives: number;
  reads: number;
  bytes: number;
  splitCharacters: number;
  readonly viewer: ReadViewer;
  readonly recording: Recording;
  response: string | undefined;
  text: string;
  readonly textNode: Text;
  readonly reasoningNode: Text;
  readonly tools: Map<number, ToolView>;
  usage: Usage | undefined;
  readonly ticker: ReturnType<typeof setInterval>;
}

/** What the page's parts share: the run in flight, and the capture of the last one (for Save). */
export const session: { current: Run | undefined; lastRecording: Recording | undefined } = {
  current: undefined,
  lastRecording: undefined,
};
