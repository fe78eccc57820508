/**
 * highlight.js core with the languages answers most often show. Loaded on demand by highlight-code.ts
 * (esbuild makes this module and highlight.js a chunk of their own: scripts/build-web.mjs).
 */
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import typescript from 'highlight.js/lib/languages/typescript';

hljs.registerLanguage('bash', bash);
hljs.registerLanguage('javascript', javascript);
hljs.registerLanguage('json', json);
hljs.registerLanguage('python', python);
hljs.registerLanguage('rust', rust);
hljs.registerLanguage('typescript', typescript);

export interface CodeHighlighter {
  /** Highlights one `<code>` element in place (its text escaped by highlight.js, spans around tokens). */
  highlight(block: HTMLElement): void;
}

export const codeHighlighter: CodeHighlighter = {
  highlight(block) {
    const code = block.textContent ?? '';
    // marked writes the fence's language as `language-ts`.
    const named = /\blanguage-([\w+-]+)/.exec(block.className)?.[1];
    const language = named !== undefined && hljs.getLanguage(named) !== undefined ? named : undefined;
    const result =
      language === undefined
        ? hljs.highlightAuto(code)
        : hljs.highlight(code, { language, ignoreIllegals: true });
    block.innerHTML = result.value;
    block.classList.add('hljs');
    block.dataset.highlighted = 'yes';
    if (result.language !== undefined) block.dataset.language = result.language;
  },
};
