/**
 * Sums several Prometheus text expositions (one per `serve --workers` process) into one: samples with
 * the same name and label set (as written: our registry sorts and escapes labels the same way in every
 * process) are added, counters, gauges and histogram series alike; `# HELP` and `# TYPE` are kept once
 * per family. Families and samples keep the order they were first seen in. Timestamps are dropped
 * (ours writes none). Written here: prom-client's aggregator works on its own registry objects, not text.
 */
export function mergePrometheusText(texts: readonly string[]): string {
  const families = new Map<string, Family>();
  for (const text of texts) {
    let family: Family | undefined;
    for (const line of text.split('\n')) {
      if (line === '') continue;
      if (line.startsWith('#')) {
        const match = /^#\s+(HELP|TYPE)\s+(\S+)(?:\s(.*))?$/.exec(line);
        if (match === null) continue; // other comments carry nothing to sum
        family = familyOf(families, match[2]!);
        if (match[1] === 'HELP') family.help ??= line;
        else family.type ??= line;
        continue;
      }
      const sample = parseSample(line);
      if (sample === undefined) continue;
      // A sample before any # line (or of another family) is its own family, named after itself.
      const owner =
        family !== undefined && sampleBelongs(sample.name, family.name)
          ? family
          : familyOf(families, sample.name);
      const key = sample.series;
      owner.samples.set(key, (owner.samples.get(key) ?? 0) + sample.value);
    }
  }
  let out = '';
  for (const family of families.values()) {
    if (family.help !== undefined) out += `${family.help}\n`;
    if (family.type !== undefined) out += `${family.type}\n`;
    for (const [series, value] of family.samples) out += `${series} ${formatValue(value)}\n`;
  }
  return out;
}

/**
 * The part of a Prometheus text that only ever grows: its counters and histograms (`# HELP`, `# TYPE`
 * and samples), without gauges or untyped samples. What the primary of `serve --workers` keeps of a
 * worker that died, summed into every later scrape, so a sum over workers never goes down when one is
 * replaced (a gauge of a dead process, its open streams, is no longer true: it is dropped).
 */
export function monotonicPart(text: string): string {
  let out = '';
  let family: string | undefined;
  let keep = false;
  // HELP comes before TYPE: held back until the TYPE says whether the family stays.
  let pendingHelp: string | undefined;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      const match = /^#\s+(HELP|TYPE)\s+(\S+)(?:\s(.*))?$/.exec(line);
      if (match === null) continue;
      if (match[2] !== family) {
        family = match[2]!;
        keep = false;
      }
      if (match[1] === 'TYPE') keep = match[3] === 'counter' || match[3] === 'histogram';
      if (match[1] === 'HELP') {
        pendingHelp = line;
        continue;
      }
      if (keep) out += `${pendingHelp === undefined ? '' : `${pendingHelp}\n`}${line}\n`;
      pendingHelp = undefined;
      continue;
    }
    const sample = parseSample(line);
    if (sample !== undefined && keep && family !== undefined && sampleBelongs(sample.name, family))
      out += `${line}\n`;
  }
  return out;
}

interface Family {
  name: string;
  help: string | undefined;
  type: string | undefined;
  /** `name{labels}` -> summed value. */
  samples: Map<string, number>;
}

function familyOf(families: Map<string, Family>, name: string): Family {
  let family = families.get(name);
  if (family === undefined) {
    family = { name, help: undefined, type: undefined, samples: new Map() };
    families.set(name, family);
  }
  return family;
}

/** A histogram's (or summary's) `_bucket`, `_sum`, `_count` samples belong to its family. */
function sampleBelongs(sample: string, family: string): boolean {
  if (sample === family) return true;
  if (!sample.startsWith(family)) return false;
  const suffix = sample.slice(family.length);
  return suffix === '_bucket' || suffix === '_sum' || suffix === '_count' || suffix === '_total';
}

/** `name{a="x",b="y"} value [timestamp]`: the series text as written and the value. */
function parseSample(line: string): { name: string; series: string; value: number } | undefined {
  let i = 0;
  while (i < line.length && line[i] !== '{' && line[i] !== ' ' && line[i] !== '\t') i++;
  const name = line.slice(0, i);
  if (name === '') return undefined;
  if (line[i] === '{') {
    // Label values may hold spaces, braces and escaped quotes.
    let quoted = false;
    for (i += 1; i < line.length; i++) {
      const c = line[i];
      if (quoted) {
        if (c === '\\') i++;
        else if (c === '"') quoted = false;
      } else if (c === '"') quoted = true;
      else if (c === '}') break;
    }
    if (i >= line.length) return undefined;
    i += 1;
  }
  const series = line.slice(0, i);
  const rest = line.slice(i).trim().split(/\s+/)[0];
  if (rest === undefined || rest === '') return undefined;
  const value = parseValue(rest);
  return value === undefined ? undefined : { name, series, value };
}

function parseValue(text: string): number | undefined {
  if (text === '+Inf' || text === 'Inf') return Number.POSITIVE_INFINITY;
  if (text === '-Inf') return Number.NEGATIVE_INFINITY;
  if (text === 'NaN') return Number.NaN;
  const value = Number(text);
  return Number.isNaN(value) ? undefined : value;
}

function formatValue(value: number): string {
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}
