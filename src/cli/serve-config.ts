import { isAlias, isMap, isScalar, isSeq, LineCounter, type Node, parseDocument, type YAMLMap } from 'yaml';
import type { DialectId } from '../dialects/dialect.ts';
import { DIALECT_IDS } from '../dialects/dialect.ts';
import { isDialectId } from '../dialects/registry.ts';
import { BALANCE_POLICIES, type BalancePolicy } from '../server/pool/choose-replica.ts';
import { UsageError } from './cli-io.ts';
import { upstreamBaseUrl } from './upstream-base-url.ts';

/** One upstream of a `serve --config` file, checked, its header values' `${NAME}` filled in. */
export interface UpstreamConfig {
  name: string;
  /** Its base URL, path kept (`http://127.0.0.1:9000/vllm`), no trailing slash, no credentials. */
  url: string;
  /** The dialects it speaks; probed when absent (and required for an upstream that is down at start). */
  dialects?: DialectId[];
  /** Sent upstream (credentials); never printed. */
  headers?: Record<string, string>;
  weight?: number;
  maxStreams?: number;
  /** The models it serves; its own list is asked for when absent. */
  models?: string[];
  /** Public name -> the server's own name. */
  aliases?: Record<string, string>;
  /** The line of the file where it starts (for later messages about it). */
  line: number;
}

/** A `serve --config` file, checked. */
export interface ServeConfig {
  upstreams: UpstreamConfig[];
  balance?: BalancePolicy;
  retries?: number;
}

const TOP_KEYS = ['upstreams', 'balance', 'retries'];
const UPSTREAM_KEYS = ['name', 'url', 'dialects', 'headers', 'weight', 'maxStreams', 'models', 'aliases'];
/** An HTTP header name (RFC 9110 token). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const ENV_REFERENCE = /\$\{([^}]*)\}/g;

/**
 * Reads a `serve --config` file: JSON, or YAML when `fileName` ends in `.yaml`/`.yml` (the `yaml`
 * package parses both, with each node's position, so every error names its line). Every error is a
 * UsageError `FILE:LINE: reason` (exit 2 before listening); header values never appear in one.
 * Header values may name environment variables as `${NAME}`, looked up in `env`.
 */
export function readServeConfig(
  text: string,
  fileName: string,
  env: Readonly<Record<string, string | undefined>> = process.env,
): ServeConfig {
  const lines = new LineCounter();
  const fail = (offset: number, reason: string): never => {
    throw new UsageError(`${fileName}:${lines.linePos(offset).line}: ${reason}`);
  };
  const yaml = /\.ya?ml$/i.test(fileName);
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  if (!yaml) {
    try {
      JSON.parse(text);
    } catch (error) {
      // Node's message may quote the text around the error (a header value): only its position is used.
      const message = (error as Error).message;
      const position = /at position (\d+)/.exec(message);
      const lineColumn = /\(line (\d+) column \d+\)/.exec(message);
      const line = position
        ? lines.linePos(Number(position[1])).line
        : lineColumn
          ? Number(lineColumn[1])
          : lines.linePos(doc.errors[0]?.pos[0] ?? 0).line;
      throw new UsageError(
        `${fileName}:${line}: not valid JSON (a file not named .yaml or .yml is read as JSON)`,
      );
    }
  }
  const first = doc.errors[0];
  if (first !== undefined) {
    // The reason without the source excerpt prettyErrors would add (it may show a header value).
    const reason = first.message.split(/ at line \d+/)[0]!.split('\n')[0]!;
    throw new UsageError(`${fileName}:${lines.linePos(first.pos[0]).line}: ${reason}`);
  }
  const resolve = (node: unknown): Node | null => {
    if (isAlias(node)) return (node.resolve(doc) as Node | undefined) ?? null;
    return (node as Node | null) ?? null;
  };
  const at = (node: Node | null, fallback: number) => node?.range?.[0] ?? fallback;

  const root = resolve(doc.contents);
  if (!isMap(root)) return fail(at(root, 0), 'the file must hold an object with "upstreams"');
  const top = entries(root, resolve, TOP_KEYS, 'at the top level', fail);
  const config: ServeConfig = { upstreams: [] };

  const list = top.get('upstreams');
  if (list === undefined) return fail(at(root, 0), '"upstreams" is missing: a list of upstreams');
  if (!isSeq(list.value) || list.value.items.length === 0)
    return fail(at(list.value, list.keyAt), '"upstreams" must be a non-empty list');
  const names = new Map<string, number>();
  for (const item of list.value.items) {
    const node = resolve(item);
    const start = at(node, list.keyAt);
    if (!isMap(node)) return fail(start, 'each upstream must be an object with "name" and "url"');
    const fields = entries(node, resolve, UPSTREAM_KEYS, 'in an upstream', fail);
    const name = fields.get('name');
    if (name === undefined) return fail(start, 'an upstream has no "name"');
    const nameText = nonEmptyString(name.value, 'name', fail, name.keyAt);
    const earlier = names.get(nameText);
    if (earlier !== undefined)
      return fail(
        at(name.value, name.keyAt),
        `two upstreams are named ${JSON.stringify(nameText)} (the other at line ${earlier})`,
      );
    names.set(nameText, lines.linePos(start).line);
    const where = `upstream ${JSON.stringify(nameText)}`;
    const urlField = fields.get('url');
    if (urlField === undefined) return fail(start, `${where} has no "url"`);
    const upstream: UpstreamConfig = {
      name: nameText,
      url: upstreamBaseUrl(nonEmptyString(urlField.value, 'url', fail, urlField.keyAt), (reason) =>
        fail(at(urlField.value, urlField.keyAt), `${where}: ${reason}`),
      ),
      line: lines.linePos(start).line,
    };
    const dialects = fields.get('dialects');
    if (dialects !== undefined) {
      const ids = stringList(dialects.value, `${where}: "dialects"`, fail, dialects.keyAt, resolve);
      for (const [id, offset] of ids)
        if (!isDialectId(id))
          fail(offset, `${where}: unknown dialect ${JSON.stringify(id)} (known: ${DIALECT_IDS.join(', ')})`);
      upstream.dialects = ids.map(([id]) => id as DialectId);
    }
    const models = fields.get('models');
    if (models !== undefined)
      upstream.models = stringList(models.value, `${where}: "models"`, fail, models.keyAt, resolve).map(
        ([model]) => model,
      );
    const weight = fields.get('weight');
    if (weight !== undefined) {
      const value = scalarValue(weight.value);
      if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0)
        fail(at(weight.value, weight.keyAt), `${where}: "weight" must be a number above 0`);
      upstream.weight = value as number;
    }
    const maxStreams = fields.get('maxStreams');
    if (maxStreams !== undefined) {
      const value = scalarValue(maxStreams.value);
      if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1)
        fail(
          at(maxStreams.value, maxStreams.keyAt),
          `${where}: "maxStreams" must be a whole number of 1 or more`,
        );
      upstream.maxStreams = value as number;
    }
    const headers = fields.get('headers');
    if (headers !== undefined) {
      upstream.headers = {};
      for (const [key, value, offset] of stringMap(
        headers.value,
        `${where}: "headers"`,
        fail,
        headers.keyAt,
        resolve,
      )) {
        if (!HEADER_NAME.test(key)) fail(offset, `${where}: ${JSON.stringify(key)} is not a header name`);
        upstream.headers[key.toLowerCase()] = value.replace(ENV_REFERENCE, (_, variable: string) => {
          const found = env[variable];
          if (found === undefined)
            return fail(
              offset,
              `${where}: header ${JSON.stringify(key)} names the environment variable ${JSON.stringify(variable)}, which is not set`,
            );
          return found;
        });
      }
    }
    const aliases = fields.get('aliases');
    if (aliases !== undefined) {
      upstream.aliases = {};
      for (const [alias, target] of stringMap(
        aliases.value,
        `${where}: "aliases"`,
        fail,
        aliases.keyAt,
        resolve,
      ))
        upstream.aliases[alias] = target;
    }
    config.upstreams.push(upstream);
  }

  const balance = top.get('balance');
  if (balance !== undefined) {
    const value = scalarValue(balance.value);
    if (typeof value !== 'string' || !BALANCE_POLICIES.includes(value as BalancePolicy))
      fail(at(balance.value, balance.keyAt), `"balance" must be one of ${BALANCE_POLICIES.join(', ')}`);
    config.balance = value as BalancePolicy;
  }
  const retries = top.get('retries');
  if (retries !== undefined) {
    const value = scalarValue(retries.value);
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
      fail(at(retries.value, retries.keyAt), '"retries" must be a whole number (0 or more)');
    config.retries = value as number;
  }
  return config;
}

type Fail = (offset: number, reason: string) => never;

interface Field {
  value: Node | null;
  /** Where its key starts (a null value has no position of its own). */
  keyAt: number;
}

/** A map's entries by key, refusing unknown keys and non-string keys. */
function entries(
  map: YAMLMap,
  resolve: (node: unknown) => Node | null,
  known: readonly string[],
  where: string,
  fail: Fail,
): Map<string, Field> {
  const found = new Map<string, Field>();
  for (const pair of map.items) {
    const key = resolve(pair.key);
    const keyAt = key?.range?.[0] ?? map.range?.[0] ?? 0;
    const name = scalarValue(key);
    if (typeof name !== 'string') return fail(keyAt, `a key ${where} is not a string`);
    if (!known.includes(name))
      return fail(keyAt, `unknown key ${JSON.stringify(name)} ${where} (known: ${known.join(', ')})`);
    found.set(name, { value: resolve(pair.value), keyAt });
  }
  return found;
}

function scalarValue(node: Node | null): unknown {
  return isScalar(node) ? node.value : undefined;
}

function nonEmptyString(node: Node | null, key: string, fail: Fail, keyAt: number): string {
  const value = scalarValue(node);
  if (typeof value !== 'string' || value.trim() === '')
    return fail(node?.range?.[0] ?? keyAt, `"${key}" must be a non-empty string`);
  return value.trim();
}

/** A list of non-empty strings, each with its offset. */
function stringList(
  node: Node | null,
  what: string,
  fail: Fail,
  keyAt: number,
  resolve: (node: unknown) => Node | null,
): [string, number][] {
  if (!isSeq(node)) return fail(node?.range?.[0] ?? keyAt, `${what} must be a list of strings`);
  return node.items.map((item) => {
    const element = resolve(item);
    const offset = element?.range?.[0] ?? keyAt;
    const value = scalarValue(element);
    if (typeof value !== 'string' || value.trim() === '')
      return fail(offset, `${what} must be a list of non-empty strings`);
    return [value.trim(), offset];
  });
}

/** A map of strings to strings: [key, value, offset of the key]. Values are not shown in errors. */
function stringMap(
  node: Node | null,
  what: string,
  fail: Fail,
  keyAt: number,
  resolve: (node: unknown) => Node | null,
): [string, string, number][] {
  if (!isMap(node)) return fail(node?.range?.[0] ?? keyAt, `${what} must be an object of strings`);
  return node.items.map((pair) => {
    const key = resolve(pair.key);
    const offset = key?.range?.[0] ?? keyAt;
    const name = scalarValue(key);
    const value = scalarValue(resolve(pair.value));
    if (typeof name !== 'string' || name === '') return fail(offset, `${what}: a key is not a string`);
    if (typeof value !== 'string')
      return fail(offset, `${what}: the value of ${JSON.stringify(name)} must be a string`);
    return [name, value, offset];
  });
}
