import { snippet } from '../../errors.ts';
import { DialectError, type DialectId } from '../dialect.ts';
import { isRecord, type JsonRecord } from './json-fields.ts';

/** Parses a frame's JSON payload; anything but a JSON object is a malformed payload of `dialect`. */
export function parsePayload(dialect: DialectId, data: string): JsonRecord {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch (cause) {
    throw new DialectError(dialect, `a payload is not valid JSON: ${snippet(data, 120)}`, { cause });
  }
  if (!isRecord(value))
    throw new DialectError(dialect, `a payload is not a JSON object: ${snippet(data, 120)}`);
  return value;
}
