import { Marked, type Tokens } from 'marked';

/**
 * Markdown -> HTML for the model's answer, safe to assign to `innerHTML`. The model's text is
 * untrusted, so nothing it writes becomes markup of its own:
 * - raw HTML (blocks and inline tags) is shown as text, escaped;
 * - links keep only http(s), mailto and in-page targets, and open in a new tab without a referrer;
 * - images are never loaded (that would fetch from outside): they become a link to the image.
 * marked escapes everything else (text, code, titles). The page's Content-Security-Policy
 * (script-src 'self', img-src 'self') is the second line of defence. marked is used rather than a
 * hand-written renderer: it is small (~40 kB), well kept and handles CommonMark + GFM properly.
 */
export function renderMarkdown(markdown: string): string {
  return marked.parse(markdown, { async: false });
}

const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Escapes text for HTML content and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

const SAFE_PROTOCOLS = new Set(['http:', 'https:', 'mailto:']);

/**
 * The URL when it is safe to link to, else undefined: it is parsed the way the browser will parse it
 * (which drops tabs and newlines inside a scheme), and only http(s) and mailto pass. Relative URLs
 * resolve to the page's own origin and pass.
 */
export function safeHref(href: string): string | undefined {
  try {
    return SAFE_PROTOCOLS.has(new URL(href, 'https://relative.invalid/').protocol) ? href : undefined;
  } catch {
    return undefined;
  }
}

const marked = new Marked({
  gfm: true,
  breaks: false,
  renderer: {
    html({ text, block }: Tokens.HTML | Tokens.Tag): string {
      // Shown as the text the model wrote, never parsed as markup.
      return block ? `<p>${escapeHtml(text.trim())}</p>\n` : escapeHtml(text);
    },
    link({ href, title, tokens }: Tokens.Link): string {
      const inner = this.parser.parseInline(tokens);
      const safe = safeHref(href);
      if (safe === undefined) return inner;
      const titleAttr = title ? ` title="${escapeHtml(title)}"` : '';
      return `<a href="${escapeHtml(safe)}"${titleAttr} target="_blank" rel="noopener noreferrer nofollow">${inner}</a>`;
    },
    image({ href, text }: Tokens.Image): string {
      const label = `[image: ${text || 'untitled'}]`;
      const safe = safeHref(href);
      if (safe === undefined) return escapeHtml(label);
      return `<a href="${escapeHtml(safe)}" class="image-link" target="_blank" rel="noopener noreferrer nofollow">${escapeHtml(label)}</a>`;
    },
  },
});
