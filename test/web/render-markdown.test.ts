import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { escapeHtml, renderMarkdown, safeHref } from '../../web/render-markdown.ts';

describe('renderMarkdown', () => {
  it('renders ordinary Markdown', () => {
    const html = renderMarkdown(
      '# Title\n\nSome **bold** and `code`.\n\n- one\n- two\n\n```js\nlet a = 1 < 2;\n```',
    );
    assert.match(html, /<h1>Title<\/h1>/);
    assert.match(html, /<strong>bold<\/strong>/);
    assert.match(html, /<code>code<\/code>/);
    assert.match(html, /<li>one<\/li>/);
    assert.match(html, /<pre><code class="language-js">let a = 1 &lt; 2;/);
  });

  it('shows raw HTML from the model as text, block and inline', () => {
    const html = renderMarkdown(
      '<script>alert(1)</script>\n\nhello <img src=x onerror="alert(2)"> and <b onclick="x()">b</b>\n\n<div>\n<iframe src="https://example.com"></iframe>\n</div>',
    );
    assert.doesNotMatch(html, /<script|<img|<b |<iframe|<div/i);
    assert.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
    assert.match(html, /&lt;img src=x onerror=&quot;alert\(2\)&quot;&gt;/);
  });

  it('drops links with dangerous schemes and keeps safe ones', () => {
    for (const href of [
      'javascript:alert(1)',
      'JaVaScRiPt:alert(1)',
      ' javascript:alert(1)',
      'java\tscript:alert(1)',
      'java\nscript:alert(1)',
      'data:text/html,<b>x',
      'vbscript:x',
    ]) {
      assert.equal(safeHref(href), undefined, JSON.stringify(href));
      const html = renderMarkdown(
        `[click](<${href.replace('\n', '\t')}>) and [bare](${href.trim().replace(/\s/g, '')})`,
      );
      assert.doesNotMatch(html, /<a /, JSON.stringify(href));
      assert.match(html, /click.*bare/);
    }
    // Percent signs do not make a scheme: this one is a harmless relative path on the page's origin.
    assert.equal(safeHref('java%09script:alert(1)'), 'java%09script:alert(1)');
    const html = renderMarkdown(
      '[docs](https://example.com/a?b=1&c="2") and <https://example.com> and [rel](/metrics)',
    );
    assert.match(
      html,
      /<a href="https:\/\/example.com\/a\?b=1&amp;c=&quot;2&quot;" target="_blank" rel="noopener noreferrer nofollow">docs<\/a>/,
    );
    assert.match(html, /<a href="https:\/\/example.com"/);
    assert.match(html, /<a href="\/metrics"/);
  });

  it('never loads images: they become links, and unsafe ones plain text', () => {
    const html = renderMarkdown('![a cat](https://example.com/cat.png) ![x](javascript:alert(1))');
    assert.doesNotMatch(html, /<img/);
    assert.match(
      html,
      /<a href="https:\/\/example.com\/cat.png" class="image-link"[^>]*>\[image: a cat\]<\/a>/,
    );
    assert.match(html, /\[image: x\]/);
    assert.doesNotMatch(html, /javascript:/);
  });

  it('escapes attribute breakers in titles and text', () => {
    const html = renderMarkdown('[t](https://example.com "a\\" onmouseover=\\"x") "quotes" & <ampersands>');
    assert.doesNotMatch(html, /" onmouseover/);
    assert.equal(
      escapeHtml(`<a href="x" title='y'>&`),
      '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;',
    );
  });
});
