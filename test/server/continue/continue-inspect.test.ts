import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { DIALECT_IDS } from '../../../src/dialects/dialect.ts';
import { serve } from '../../../src/node/serve.ts';
import { createGateway } from '../../../src/server/create-gateway.ts';
import { createSim } from '../../../src/sim/index.ts';
import { cli, FakeIo } from '../../cli/cli-helpers.ts';

const open: { close(): Promise<void> }[] = [];
after(async () => {
  for (const server of open.reverse()) await server.close();
});

async function pool(): Promise<string> {
  const timing = { tokensPerSecond: 4000, loadMs: 0, jitter: 0 };
  const dying = await serve(createSim({ timing, faults: 'die-after=6' }).fetch);
  const sibling = await serve(createSim({ timing }).fetch);
  const g = createGateway({
    upstreams: [
      { name: 'dying', url: dying.url, dialects: DIALECT_IDS, models: ['sim'] },
      { name: 'sibling', url: sibling.url, dialects: DIALECT_IDS, models: ['sim'] },
    ],
    balance: 'round-robin',
    healthIntervalMs: 0,
    continueOnFailure: true,
  });
  const served = await serve(g.fetch);
  open.push(dying, sibling, {
    close: async () => {
      await g.close();
      await served.close();
    },
  });
  return served.url;
}

describe('inspect names the seam of a continued stream', () => {
  it('--json: a `continued` finding (who went on, after how many tokens); the stream is complete, exit 0', async () => {
    const url = await pool();
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
    const url = await pool();
    const io = new FakeIo();
    await cli(['inspect', `${url}/v1/chat/completions`, '--model', 'sim'], io);
    assert.match(
      io.out,
      /comment ": continued on sibling after \d+ tokens" \(the seam: another replica goes on\)/,
    );
  });
});
