/**
 * The playground page: a conversation with the model through the gateway, using the project's own
 * client (`stream()` from src/client, bundled by scripts/build-web.mjs). Its parts, each in the file
 * named after what it shows:
 * - request-controls.ts: the request bar and Settings (model, dialect, failure presets, sampling);
 * - conversation-view.ts: the prompt, the earlier turns, kept conversations and their export;
 * - answer-view.ts: the answer as it streams, how it ended, the live figures;
 * - wire-view.ts: each read on the wire beside what the client made of it;
 * - capture-files.ts: saving and loading captures;
 * - render-markdown.ts, highlight-code.ts: the settled answer's Markdown and code.
 * This file starts them and binds the keyboard.
 */
import { initCaptureFiles } from './capture-files.ts';
import { initConversation, send, stop } from './conversation-view.ts';
import { initControls } from './request-controls.ts';
import { session } from './run.ts';

const form = document.getElementById('request-form') as HTMLFormElement;

void initControls().then(() => {
  // Tests (and anything that waits for the page) read this once the model list and /sim/ probe are in.
  document.body.dataset.simRaw = String(!(document.getElementById('raw-sim') as HTMLInputElement).disabled);
});
initConversation();
initCaptureFiles();

form.addEventListener('submit', (event) => {
  event.preventDefault();
  void send();
});
document.getElementById('stop')?.addEventListener('click', stop);
document.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
    event.preventDefault();
    void send();
  } else if (event.key === 'Escape' && session.current !== undefined) {
    event.preventDefault();
    stop();
  }
});
