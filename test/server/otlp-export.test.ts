import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import { repoRoot } from '../helpers/paths.ts';

interface Posted {
  path: string;
  contentType: string | undefined;
  body: string;
}

interface OtlpValue {
  stringValue?: string;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpTraces {
  resourceSpans: {
    resource: { attributes: OtlpAttribute[] };
    scopeSpans: { spans: { name: string; traceId: string; attributes: OtlpAttribute[] }[] }[];
  }[];
}
interface OtlpMetrics {
  resourceMetrics: { scopeMetrics: { metrics: { name: string; unit: string }[] }[] }[];
}

/**
 * `tokenwire serve` configured only by OTEL_* variables sends its spans and metrics through the real
 * OTLP/HTTP exporters to a receiver this test runs on 127.0.0.1.
 */
describe('OTLP/HTTP export (tokenwire serve + OTEL_* variables)', () => {
  it('sends spans and GenAI metrics to OTEL_EXPORTER_OTLP_ENDPOINT, flushed at shutdown', async () => {
    const posted: Posted[] = [];
    const receiver = createServer(async (req, res) => {
      let body = '';
      for await (const chunk of req) body += chunk;
      posted.push({ path: req.url ?? '', contentType: req.headers['content-type'], body });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    const child = spawn(
      process.execPath,
      [join(repoRoot, '.build/src/cli/bin.js'), 'serve', '--port', '0', '--json'],
      {
        env: {
          ...process.env,
          OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl,
          OTEL_SERVICE_NAME: 'tokenwire-otlp-test',
          OTEL_METRIC_EXPORT_INTERVAL: '60000',
          OTEL_BSP_SCHEDULE_DELAY: '100',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const firstLine = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout }).once('line', resolve);
        child.once('exit', () => reject(new Error(`serve exited early: ${stderr}`)));
      });
      const { url } = JSON.parse(firstLine) as { url: string };
      const response = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
        body: JSON.stringify({
          model: 'sim',
          stream: true,
          max_tokens: 8,
          messages: [{ role: 'user', content: 'hello' }],
        }),
      });
      assert.equal(response.status, 200);
      await response.text();
      const text = await fetch(`${url}/api/generate?format=text`, {
        method: 'POST',
        body: JSON.stringify({ model: 'sim', prompt: 'hi', options: { num_predict: 4 } }),
      });
      assert.match(await text.text(), /\[tokenwire: truncated \(length\), 4 tokens\]/);
    } finally {
      child.kill('SIGTERM');
    }
    assert.equal(await exited, 0, stderr);
    await new Promise<void>((resolve) => receiver.close(() => resolve()));

    const traces = posted.filter((p) => p.path === '/v1/traces');
    const metrics = posted.filter((p) => p.path === '/v1/metrics');
    assert.ok(traces.length > 0, 'spans arrived');
    assert.ok(metrics.length > 0, 'metrics arrived');
    for (const post of [...traces, ...metrics]) assert.match(post.contentType ?? '', /application\/json/);

    const spans = traces.flatMap((p) =>
      (JSON.parse(p.body) as OtlpTraces).resourceSpans.flatMap((r) => {
        const service = r.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue;
        assert.equal(service, 'tokenwire-otlp-test');
        return r.scopeSpans.flatMap((s) => s.spans);
      }),
    );
    const names = spans.map((s) => s.name);
    assert.ok(names.includes('POST /v1/chat/completions'), names.join(', '));
    assert.ok(names.includes('POST /api/generate'), names.join(', '));
    assert.ok(names.includes('chat sim'), names.join(', '));
    assert.ok(
      spans.some((s) => s.name === 'POST /v1/chat/completions' && s.traceId === traceId),
      'the span continues the incoming traceparent',
    );

    const metricNames = new Set(
      metrics.flatMap((p) =>
        (JSON.parse(p.body) as OtlpMetrics).resourceMetrics.flatMap((r) =>
          r.scopeMetrics.flatMap((s) => s.metrics.map((m) => m.name)),
        ),
      ),
    );
    for (const name of [
      'gen_ai.server.time_to_first_token',
      'gen_ai.server.time_per_output_token',
      'gen_ai.server.request.duration',
      'gen_ai.client.operation.duration',
      'gen_ai.client.token.usage',
    ])
      assert.ok(metricNames.has(name), `${name} in ${[...metricNames].join(', ')}`);
  });
});
