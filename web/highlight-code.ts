/**
 * Syntax highlighting for the code blocks of a settled answer. The highlighter (highlight.js core with a
 * few languages: code-highlighter.ts) is a separate chunk of the bundle, imported the first time an
 * answer holds a code block: a page that never shows code never loads it. highlight.js is used rather
 * than our own: it is well kept, small in its core form, and escapes what it highlights.
 */
import type { CodeHighlighter } from './code-highlighter.ts';

let loading: Promise<CodeHighlighter> | undefined;

/** Highlights every `pre > code` under `root` (loading the highlighter once, on first need). */
export function highlightCodeIn(root: HTMLElement): void {
  const blocks = [...root.querySelectorAll<HTMLElement>('pre > code')];
  if (blocks.length === 0) return;
  loading ??= import('./code-highlighter.ts').then((module) => module.codeHighlighter);
  void loading.then(
    (highlighter) => {
      for (const block of blocks) {
        // The answer may have been re-rendered meanwhile: only blocks still on the page.
        if (block.isConnected && block.dataset.highlighted !== 'yes') highlighter.highlight(block);
      }
    },
    () => {
      // Unhighlighted code is still readable; the next code block tries the import again.
      loading = undefined;
    },
  );
}
