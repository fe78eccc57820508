import { TOOL_WORDS } from './corpus.ts';
import { type Rng, randomInt } from './prng.ts';

type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

const MAX_DEPTH = 4;

/**
 * Arguments for a tool call, made up from the tool's JSON Schema: every declared property gets a
 * value of its type (an `enum` member, a corpus word, a number, a boolean, an array of one or two
 * items, a nested object). A schema with no properties gives `{}`.
 */
export function toolArguments(schema: unknown, rng: Rng): { [key: string]: JsonValue } {
  const value = valueFor(schema, rng, 0);
  return isObject(value) ? value : {};
}

function valueFor(schema: unknown, rng: Rng, depth: number): JsonValue {
  if (!isRecord(schema)) return word(rng);
  const choices = schema.enum;
  if (Array.isArray(choices) && choices.length > 0) {
    const choice = choices[Math.floor(rng() * choices.length)];
    return isJson(choice) ? choice : word(rng);
  }
  if ('const' in schema && isJson(schema.const)) return schema.const;
  switch (schemaType(schema)) {
    case 'object': {
      const out: { [key: string]: JsonValue } = {};
      const properties = schema.properties;
      if (depth >= MAX_DEPTH || !isRecord(properties)) return out;
      for (const [key, property] of Object.entries(properties)) out[key] = valueFor(property, rng, depth + 1);
      return out;
    }
    case 'array': {
      if (depth >= MAX_DEPTH) return [];
      const count = randomInt(rng, 1, 2);
      const items: JsonValue[] = [];
      for (let i = 0; i < count; i++) items.push(valueFor(schema.items, rng, depth + 1));
      return items;
    }
    case 'integer':
      return randomInt(rng, 1, 100);
    case 'number':
      return Math.round(rng() * 10000) / 100;
    case 'boolean':
      return rng() < 0.5;
    case 'null':
      return null;
    default:
      return word(rng);
  }
}

function schemaType(schema: Record<string, unknown>): string | undefined {
  const type = schema.type;
  if (typeof type === 'string') return type;
  if (Array.isArray(type)) return type.find((t): t is string => typeof t === 'string' && t !== 'null');
  if (isRecord(schema.properties)) return 'object';
  return undefined;
}

function word(rng: Rng): string {
  return TOOL_WORDS[Math.floor(rng() * TOOL_WORDS.length)] ?? 'river';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isObject(value: JsonValue): value is { [key: string]: JsonValue } {
  return isRecord(value);
}

function isJson(value: unknown): value is JsonValue {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (Array.isArray(value)) return value.every(isJson);
  return isRecord(value) && Object.values(value).every(isJson);
}
