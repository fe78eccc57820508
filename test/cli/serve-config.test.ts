import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { UsageError } from '../../src/cli/cli-io.ts';
import { readServeConfig } from '../../src/cli/serve-config.ts';
import { upstreamBaseUrl, upstreamNameFor } from '../../src/cli/upstream-base-url.ts';

const JSON_CONFIG = `{
  "upstreams": [
    {
      "name": "vllm-a",
      "url": "http://10.0.0.5:8000/vllm/",
      "dialects": ["openai-chat", "openai-completions"],
      "headers": { "Authorization": "Bearer \${VLLM_KEY}" },
      "weight": 2,
      "maxStreams": 16,
      "models": ["qwen2.5-7b-instruct"],
      "aliases": { "chat": "qwen2.5-7b-instruct" }
    },
    { "name": "ollama", "url": "http://127.0.0.1:11434" }
  ],
  "balance": "prefix",
  "retries": 3
}
`;

const YAML_CONFIG = `# two servers
upstreams:
  - name: vllm-a
    url: http://10.0.0.5:8000/vllm/
    dialects: [openai-chat, openai-completions]
    headers:
      Authorization: Bearer \${VLLM_KEY}
    weight: 2
    maxStreams: 16
    models: [qwen2.5-7b-instruct]
    aliases:
      chat: qwen2.5-7b-instruct
  - name: ollama
    url: http://127.0.0.1:11434
balance: prefix
retries: 3
`;

const ENV = { VLLM_KEY: 'sk-secret-123' };

const EXPECTED = {
  upstreams: [
    {
      name: 'vllm-a',
      url: 'http://10.0.0.5:8000/vllm',
      dialects: ['openai-chat', 'openai-completions'],
      headers: { authorization: 'Bearer sk-secret-123' },
      weight: 2,
      maxStreams: 16,
      models: ['qwen2.5-7b-instruct'],
      aliases: { chat: 'qwen2.5-7b-instruct' },
      line: 3,
    },
    { name: 'ollama', url: 'http://127.0.0.1:11434', line: 13 },
  ],
  balance: 'prefix',
  retries: 3,
};

/** The UsageError message readServeConfig throws, asserting it is one. */
function errorOf(text: string, fileName: string, env: Record<string, string> = ENV): string {
  try {
    readServeConfig(text, fileName, env);
  } catch (error) {
    assert.ok(error instanceof UsageError, `a UsageError, got ${String(error)}`);
    return error.message;
  }
  return assert.fail('no error');
}

describe('readServeConfig', () => {
  it(`reads the JSON form: every field, the path kept without its trailing slash, \${VAR} filled in`, () => {
    assert.deepEqual(readServeConfig(JSON_CONFIG, 'pool.json', ENV), EXPECTED);
  });

  it('reads the same config as YAML (.yaml and .yml), with YAML lines', () => {
    const expected = structuredClone(EXPECTED);
    expected.upstreams[0]!.line = 3;
    expected.upstreams[1]!.line = 13;
    assert.deepEqual(readServeConfig(YAML_CONFIG, 'pool.yaml', ENV), expected);
    assert.deepEqual(readServeConfig(YAML_CONFIG, 'POOL.YML', ENV), expected);
  });

  it('leaves out what is not given (no balance, no retries, no optional field)', () => {
    assert.deepEqual(readServeConfig('{"upstreams":[{"name":"a","url":"http://h:1"}]}', 'c.json', {}), {
      upstreams: [{ name: 'a', url: 'http://h:1', line: 1 }],
    });
  });

  it('a JSON file must be JSON: YAML in a .json file is refused with its line', () => {
    assert.equal(
      errorOf('{\n  "upstreams": [\n    {"name": "a", "url": "http://h:1",}\n  ]\n}\n', 'c.json'),
      'c.json:3: not valid JSON (a file not named .yaml or .yml is read as JSON)',
    );
    assert.match(errorOf(YAML_CONFIG, 'c.json'), /^c\.json:1: not valid JSON/);
  });

  it('a YAML syntax error names its line, without quoting the file', () => {
    const message = errorOf('upstreams:\n  - name: a\n    url: "http://h:1"x\n    weight: 1\n', 'c.yaml');
    assert.equal(message, 'c.yaml:3: Unexpected scalar at node end');
    assert.doesNotMatch(message, /\n/);
  });

  it('a duplicate key is an error (not the last one silently winning), on its line', () => {
    assert.match(
      errorOf('upstreams:\n  - name: a\n    url: http://h:1\n    url: http://h:2\n', 'c.yaml'),
      /^c\.yaml:4: Map keys must be unique/,
    );
    assert.match(
      errorOf('{"upstreams": [{"name": "a",\n "url": "http://h:1",\n "url": "http://h:2"}]}', 'c.json'),
      /^c\.json:3: Map keys must be unique/,
    );
  });

  const errors: [string, string, string | RegExp][] = [
    [
      'unknown top-level key',
      '{"upstreams":[{"name":"a","url":"http://h:1"}],\n"balanse":"prefix"}',
      /^c\.json:2: unknown key "balanse" at the top level \(known: upstreams, balance, retries\)$/,
    ],
    [
      'unknown upstream key',
      '{"upstreams":[{"name":"a",\n"url":"http://h:1",\n"wieght":2}]}',
      /^c\.json:3: unknown key "wieght" in an upstream/,
    ],
    ['not an object', '[1, 2]', 'c.json:1: the file must hold an object with "upstreams"'],
    ['no upstreams', '{"balance":"prefix"}', 'c.json:1: "upstreams" is missing: a list of upstreams'],
    ['empty upstreams', '{\n"upstreams": []}', 'c.json:2: "upstreams" must be a non-empty list'],
    [
      'an upstream not an object',
      '{"upstreams": [\n"http://h:1"]}',
      'c.json:2: each upstream must be an object with "name" and "url"',
    ],
    ['no name', '{"upstreams": [\n{"url":"http://h:1"}]}', 'c.json:2: an upstream has no "name"'],
    [
      'name not a string',
      '{"upstreams": [{"name":\n 7, "url":"http://h:1"}]}',
      'c.json:2: "name" must be a non-empty string',
    ],
    ['no url', '{"upstreams": [\n{"name":"a"}]}', 'c.json:2: upstream "a" has no "url"'],
    [
      'bad url',
      '{"upstreams": [{"name":"a",\n"url":"not a url"}]}',
      'c.json:2: upstream "a": "not a url" is not a URL',
    ],
    [
      'not http',
      '{"upstreams": [{"name":"a",\n"url":"ftp://h:1"}]}',
      'c.json:2: upstream "a": the URL must be http:// or https://, not ftp:',
    ],
    [
      'credentials in the url',
      '{"upstreams": [{"name":"a",\n"url":"http://u:pw@h:1"}]}',
      'c.json:2: upstream "a": the URL holds credentials: send them as a header (Authorization) instead',
    ],
    [
      'query in the url',
      '{"upstreams": [{"name":"a",\n"url":"http://h:1/?x=1"}]}',
      'c.json:2: upstream "a": the URL must not have a query or a fragment',
    ],
    [
      'duplicate name',
      '{"upstreams": [\n{"name":"a","url":"http://h:1"},\n{"name":"a","url":"http://h:2"}]}',
      'c.json:3: two upstreams are named "a" (the other at line 2)',
    ],
    [
      'weight 0',
      '{"upstreams": [{"name":"a","url":"http://h:1",\n"weight":0}]}',
      'c.json:2: upstream "a": "weight" must be a number above 0',
    ],
    [
      'weight negative',
      '{"upstreams": [{"name":"a","url":"http://h:1",\n"weight":-1}]}',
      'c.json:2: upstream "a": "weight" must be a number above 0',
    ],
    [
      'weight a string',
      '{"upstreams": [{"name":"a","url":"http://h:1",\n"weight":"2"}]}',
      'c.json:2: upstream "a": "weight" must be a number above 0',
    ],
    [
      'maxStreams not whole',
      '{"upstreams": [{"name":"a","url":"http://h:1",\n"maxStreams":1.5}]}',
      'c.json:2: upstream "a": "maxStreams" must be a whole number of 1 or more',
    ],
    [
      'unknown dialect',
      '{"upstreams": [{"name":"a","url":"http://h:1","dialects":[\n"openai-chat",\n"vllm"]}]}',
      /^c\.json:3: upstream "a": unknown dialect "vllm" \(known: openai-chat, /,
    ],
    [
      'dialects not a list',
      '{"upstreams": [{"name":"a","url":"http://h:1",\n"dialects":"openai-chat"}]}',
      'c.json:2: upstream "a": "dialects" must be a list of strings',
    ],
    [
      'models not strings',
      '{"upstreams": [{"name":"a","url":"http://h:1","models":[\n1]}]}',
      'c.json:2: upstream "a": "models" must be a list of non-empty strings',
    ],
    [
      'headers not an object',
      '{"upstreams": [{"name":"a","url":"http://h:1",\n"headers":["x"]}]}',
      'c.json:2: upstream "a": "headers" must be an object of strings',
    ],
    [
      'a bad header name',
      '{"upstreams": [{"name":"a","url":"http://h:1","headers":{\n"bad name":"v"}}]}',
      'c.json:2: upstream "a": "bad name" is not a header name',
    ],
    [
      'a header value not a string',
      '{"upstreams": [{"name":"a","url":"http://h:1","headers":{\n"x-n":3}}]}',
      'c.json:2: upstream "a": "headers": the value of "x-n" must be a string',
    ],
    [
      'aliases not strings',
      '{"upstreams": [{"name":"a","url":"http://h:1","aliases":{\n"chat":["m"]}}]}',
      'c.json:2: upstream "a": "aliases": the value of "chat" must be a string',
    ],
    [
      'bad balance',
      '{"upstreams": [{"name":"a","url":"http://h:1"}],\n"balance":"random"}',
      'c.json:2: "balance" must be one of least-busy, round-robin, prefix, load',
    ],
    [
      'bad retries',
      '{"upstreams": [{"name":"a","url":"http://h:1"}],\n"retries":-1}',
      'c.json:2: "retries" must be a whole number (0 or more)',
    ],
    [
      'retries a string',
      'upstreams:\n  - {name: a, url: "http://h:1"}\nretries: two\n',
      'c.json:1: not valid JSON (a file not named .yaml or .yml is read as JSON)',
    ],
  ];
  for (const [what, text, expected] of errors) {
    it(`refuses ${what}, naming the file and the line`, () => {
      const message = errorOf(text, 'c.json');
      if (typeof expected === 'string') assert.equal(message, expected);
      else assert.match(message, expected);
    });
  }

  it('the same errors in YAML name the YAML line', () => {
    assert.equal(
      errorOf('upstreams:\n  - name: a\n    url: http://h:1\n    weight: 0\n', 'c.yml'),
      'c.yml:4: upstream "a": "weight" must be a number above 0',
    );
    assert.equal(
      errorOf('upstreams:\n  - name: a\n    url: http://h:1\nretries: two\n', 'c.yml'),
      'c.yml:4: "retries" must be a whole number (0 or more)',
    );
    assert.equal(
      errorOf('upstreams:\n  - name: a\n    url: http://h:1\n  - name: a\n    url: http://h:2\n', 'c.yml'),
      'c.yml:4: two upstreams are named "a" (the other at line 2)',
    );
  });

  it('a missing environment variable names it, and no header value appears in any error', () => {
    const text = `{"upstreams": [{"name":"a","url":"http://h:1","headers":{\n"Authorization":"Bearer \${NOPE_KEY}",\n"x-other":"literal-secret-9"}}]}`;
    const message = errorOf(text, 'c.json', {});
    assert.equal(
      message,
      'c.json:2: upstream "a": header "Authorization" names the environment variable "NOPE_KEY", which is not set',
    );
    assert.doesNotMatch(message, /Bearer|literal-secret-9/);
    // A syntax error right after a credential: the line, not the text.
    const broken = errorOf(
      '{"upstreams": [{"name":"a","url":"http://h:1","headers":{\n"x-key":"sk-live-777" oops}}]}',
      'c.json',
    );
    assert.doesNotMatch(broken, /sk-live-777/);
    assert.match(broken, /^c\.json:2: /);
    const brokenYaml = errorOf('upstreams:\n  - name: a\n    headers: {x-key: "sk-live-777", [\n', 'c.yaml');
    assert.doesNotMatch(brokenYaml, /sk-live-777/);
  });

  it(`fills in several \${VAR}s in one value, and leaves other text as written`, () => {
    const config = readServeConfig(
      `upstreams:\n  - name: a\n    url: http://h:1\n    headers:\n      x-auth: "\${USER_ID}:\${TOKEN} $plain"\n`,
      'c.yaml',
      { USER_ID: 'u1', TOKEN: 't2' },
    );
    assert.deepEqual(config.upstreams[0]!.headers, { 'x-auth': 'u1:t2 $plain' });
  });

  it('YAML anchors resolve (one set of headers shared by two upstreams)', () => {
    const config = readServeConfig(
      `upstreams:\n  - name: a\n    url: http://h:1\n    headers: &auth {authorization: "Bearer \${K}"}\n  - name: b\n    url: http://h:2\n    headers: *auth\n`,
      'c.yaml',
      { K: 'k' },
    );
    assert.deepEqual(
      config.upstreams.map((u) => u.headers),
      [{ authorization: 'Bearer k' }, { authorization: 'Bearer k' }],
    );
  });
});

describe('upstreamBaseUrl and upstreamNameFor', () => {
  const fail = (reason: string): never => {
    throw new Error(reason);
  };
  it('keeps the path, drops a trailing slash; names are host:port and the path', () => {
    assert.equal(upstreamBaseUrl('http://127.0.0.1:9000/vllm/', fail), 'http://127.0.0.1:9000/vllm');
    assert.equal(upstreamBaseUrl('http://127.0.0.1:9000/', fail), 'http://127.0.0.1:9000');
    assert.equal(upstreamNameFor('http://127.0.0.1:9000/vllm'), '127.0.0.1:9000/vllm');
    assert.equal(upstreamNameFor('https://api.example.com'), 'api.example.com');
  });
});
