import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { cli, FakeIo } from '../../cli/cli-helpers.ts';
import { ContinuePool } from '../../helpers/continue-pool.ts';

const pool = new ContinuePool();
after(() => pool.close());

/** A gateway in front of a replica that dies after 6 tokens and its sibling, continuation on. */
async function dyingPool(): Promise<string> {
  const dying = await pool.replica('dying', { faults: 'die-after=6' });
  const sibling = await pool.replica('sibling');
  return (await pool.gateway([dying.upstream, sibling.upstream], { continueOnFailure: true })).url;
}

describe('inspect names the seam of a continued stream', () => {
  it('--json: a `continued` finding (who went on, after how many tokens); the stream is complete, exit 0', async () => {
    const url = await dyingPool();
    const io = new FakeIo();
    const { code } = await cli(['inspect', `${url}/v1/chat/completions`, '--model', 'sim', '--json'], io);
    const report = JSON.parse(io.out) as {
      findings: { id: string; details?: { seams?: { upstream: string; afterTokens: number }[] } }[];
      result?: { complete: boolean };
    };
    assert.equal(code, 0);
    assert.equal(report.result?.complete, true);
    const continued = report.findings.find((finding) => finding.id === 'continued');
    assert.ok(continued, report.findings.map((finding) => finding.id).join(', '));
    assert.equal(continued.details?.seams?.[0]?.upstream, 'sibling');
    assert.ok((continued.details?.seams?.[0]?.afterTokens ?? 0) > 0);
    assert.equal(
      report.findings.some((finding) => finding.id === 'keepalive'),
      false,
      'the seam is no keepalive',
    );
  });

  it('the wire view marks the comment as the seam', async () => {
    const url = await dyingPool();
    const io = new FakeIo();
    await cli(['inspect', `${url}/v1/chat/completions`, '--model', 'sim'], io);
    assert.match(
      io.out,
      /comment ": continued on sibling after \d+ tokens" \(the seam: another replica goes on\)/,
    );
  });
});
