import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type DirectWriter, directBodyOf, ResponseOutput } from '../../src/server/http/response-output.ts';

function recordingWriter(accept = true) {
  const calls: string[] = [];
  const writer: DirectWriter = {
    write: (text) => {
      calls.push(`write:${text}`);
      return accept;
    },
    end: (text?: string) => calls.push(text === undefined || text === '' ? 'end' : `end:${text}`),
    destroy: () => calls.push('destroy'),
  };
  return { calls, writer };
}

describe('ResponseOutput', () => {
  it('holds text until a consumer arrives, then gives it to a stream reader in order', async () => {
    const output = new ResponseOutput(() => {});
    output.write('a');
    output.write('b');
    output.end();
    assert.equal(await new Response(output.body).text(), 'ab');
  });

  it('writes straight to an attached writer, one write per tick, and ends with the last text', async () => {
    const output = new ResponseOutput(() => {});
    output.write('held');
    output.write('-too');
    const { calls, writer } = recordingWriter();
    directBodyOf(output.body)!.attach(writer);
    output.write('x');
    output.write('y');
    assert.deepEqual(calls, ['write:held-too'], 'text of this tick is not written yet');
    await Promise.resolve();
    assert.deepEqual(calls, ['write:held-too', 'write:xy']);
    output.write('z');
    output.end();
    assert.deepEqual(calls, ['write:held-too', 'write:xy', 'end:z']);
    await Promise.resolve();
    assert.equal(calls.length, 3, 'nothing written after the end');
  });

  it('writes the text of every piece of one upstream read in one write, once that read is handled', async () => {
    // The reader asks for backpressure after each piece (one HTTP chunk) of a read; a read under load
    // carries several, and one socket write per piece was one syscall each.
    const output = new ResponseOutput(() => {});
    const { calls, writer } = recordingWriter();
    directBodyOf(output.body)!.attach(writer);
    output.write('a');
    assert.equal(output.backpressure(), undefined);
    output.write('b');
    assert.equal(output.backpressure(), undefined);
    assert.deepEqual(calls, [], 'nothing written piece by piece');
    await Promise.resolve();
    assert.deepEqual(calls, ['write:ab']);
  });

  it('pushes back once a write found the socket full, until drained', async () => {
    const output = new ResponseOutput(() => {});
    const { calls, writer } = recordingWriter(false);
    const attachment = directBodyOf(output.body)!.attach(writer);
    output.write('x');
    assert.equal(output.backpressure(), undefined, 'the read that is being handled goes on');
    await Promise.resolve();
    assert.deepEqual(calls, ['write:x']);
    output.write('y');
    const wait = output.backpressure();
    assert.ok(wait !== undefined, 'the next read waits');
    let resumed = false;
    wait.then(() => {
      resumed = true;
    });
    await Promise.resolve();
    assert.equal(resumed, false);
    attachment.drained();
    await wait;
    assert.equal(output.backpressure(), undefined);
  });

  it('tells when the client leaves (closed socket or cancelled reader), once, and drops later writes', async () => {
    let gone = 0;
    const direct = new ResponseOutput(() => gone++);
    const { calls, writer } = recordingWriter();
    const attachment = directBodyOf(direct.body)!.attach(writer);
    attachment.closed();
    attachment.closed();
    direct.write('late');
    assert.equal(gone, 1);
    assert.equal(direct.gone, true);
    assert.ok(!calls.includes('write:late'));

    const streamed = new ResponseOutput(() => gone++);
    const reader = streamed.body.getReader();
    await reader.cancel();
    assert.equal(gone, 2);
  });

  it('cuts the response abruptly on destroy, never ending it cleanly', async () => {
    const output = new ResponseOutput(() => {});
    output.write('partial');
    output.destroy();
    await assert.rejects(new Response(output.body).text());
    const { calls, writer } = recordingWriter();
    const direct = new ResponseOutput(() => {});
    directBodyOf(direct.body)!.attach(writer);
    direct.destroy();
    assert.deepEqual(calls, ['destroy']);
  });

  it('refuses a second consumer', () => {
    const output = new ResponseOutput(() => {});
    const body = output.body;
    directBodyOf(body)!.attach(recordingWriter().writer);
    assert.throws(() => directBodyOf(body)!.attach(recordingWriter().writer), /already being read/);
  });

  it('lets its stream go once a direct writer attaches (an idle stream holds no Web Streams objects)', () => {
    const output = new ResponseOutput(() => {});
    directBodyOf(output.body)!.attach(recordingWriter().writer);
    assert.throws(() => output.body, /already taken directly/);
  });
});
