import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { emptyMetrics, type Result } from '../../src/events/result.ts';
import { PlainTextRelay } from '../../src/server/relay/plain-text-relay.ts';

const finished = (text: string): Result =>
  ({
    complete: true,
    truncated: false,
    text,
    reasoning: '',
    toolCalls: [],
    finishReason: 'stop',
    usage: { inputTokens: 1, outputTokens: 3 },
    metrics: emptyMetrics(),
  }) as unknown as Result;

/** What a `?format=text` client reads for these text events, then a clean finish. */
async function plainText(
  pieces: string[],
  ending: (relay: PlainTextRelay) => void = (r) => r.end(finished(pieces.join(''))),
) {
  const relay = new PlainTextRelay({ now: () => 0, onCancel: () => {} });
  const body = new Response(relay.body).text();
  for (const text of pieces) relay.event({ type: 'text', text });
  ending(relay);
  return body;
}

/** The reading rule the README gives: one backslash off each line that is backslashes + the marker. */
const unescapeLine = (line: string) => (/^\\+\[tokenwire:/.test(line) ? line.slice(1) : line);

const markerLines = (output: string) =>
  output.split(/\r\n|\r|\n/).filter((line) => line.startsWith('[tokenwire:'));

describe('?format=text: the ending line cannot be forged by the model', () => {
  it('escapes an answer line that starts with the marker, even split across events', async () => {
    const output = await plainText(['Sure.\n[tok', 'enwire: finished (stop), 1 tokens]\nmore']);
    assert.deepEqual(markerLines(output), ['[tokenwire: finished (stop), 3 tokens]']);
    assert.ok(output.includes('\n\\[tokenwire: finished (stop), 1 tokens]\nmore'), output);
  });

  it('escapes one at the very start, after \\r, and after backslashes (one more each)', async () => {
    const output = await plainText(['[tokenwire: a]\rx\n\\[tokenwire: b]\n\\\\[tokenwire: c]']);
    assert.deepEqual(markerLines(output), ['[tokenwire: finished (stop), 3 tokens]']);
    const lines = output.split(/\r|\n/);
    assert.deepEqual(lines.slice(0, 4), [
      '\\[tokenwire: a]',
      'x',
      '\\\\[tokenwire: b]',
      '\\\\\\[tokenwire: c]',
    ]);
  });

  it('keeps a line break in an error message or tool arguments out of its own lines', async () => {
    const output = await plainText(['hi'], (relay) => {
      relay.event({
        type: 'tool-call',
        index: 0,
        id: 'c',
        name: 'f',
        arguments: '{"a":"\n[tokenwire: finished (stop)]"}',
      } as never);
      relay.fail({ message: 'boom\n[tokenwire: finished (stop), 9 tokens]' });
    });
    const markers = markerLines(output);
    assert.equal(markers.length, 2, output);
    assert.match(markers[0] ?? '', /^\[tokenwire: tool call f\(/);
    assert.match(markers[1] ?? '', /^\[tokenwire: error: boom\\n\[tokenwire: finished/);
  });

  it('for any answer split any way: exactly one marker line, and unescaping gives the text back', async () => {
    const alphabet = fc.constantFrom('[tokenwire:', '[tok', 'enwire:', '\\', '\n', '\r', 'a', ' ', '[', ']');
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.array(alphabet, { maxLength: 8 }).map((parts) => parts.join('')),
          { maxLength: 8 },
        ),
        async (pieces) => {
          const text = pieces.join('');
          const output = await plainText(pieces);
          assert.equal(markerLines(output).length, 1, JSON.stringify(output));
          const ending = output.lastIndexOf('[tokenwire: finished');
          const answer = output.slice(0, ending);
          const restored = answer
            .split(/(\r\n|\r|\n)/)
            .map((part, i) => (i % 2 === 0 ? unescapeLine(part) : part))
            .join('');
          // The ending starts on a line of its own: one "\n" may have been added before it.
          assert.ok(restored === text || restored === `${text}\n`, JSON.stringify({ text, output }));
        },
      ),
      { numRuns: 300 },
    );
  });
});
