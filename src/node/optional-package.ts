import { TokenwireError } from '../errors.ts';

/**
 * A feature was used whose optional peer dependency is not installed. The client and wire layers need
 * no package; the gateway's upstream fetch (undici), the simulator (gpt-tokenizer), the Redis store
 * (ioredis), telemetry export (OpenTelemetry SDK), the bench (hdr-histogram-js) and `serve --config`
 * (yaml) load theirs when used.
 */
export class MissingPackageError extends TokenwireError {
  /** The npm package to install. */
  readonly packageName: string;

  /** `packageName` may be several, space-separated: all are named, in one install command. */
  constructor(packageName: string, feature: string, cause?: unknown) {
    const several = packageName.includes(' ');
    super(
      'missing-package',
      `${feature} needs the npm package${several ? 's' : ''} ${packageName}, which ${several ? 'are' : 'is'} not installed: npm install ${packageName}`,
      cause === undefined ? {} : { cause },
    );
    this.name = 'MissingPackageError';
    this.packageName = packageName;
  }
}

/** The package a bare specifier names: `@scope/name/sub` -> `@scope/name`, `name/sub` -> `name`. */
export function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier);
}

/** True when `error` is the module loader failing to find `packageName` (not an error inside it). */
export function isMissingPackage(error: unknown, packageName: string): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return false;
  return typeof message === 'string' && message.includes(`'${packageName}`);
}

/**
 * Runs `load` (a dynamic `import()` of the feature's code or of the package itself); when the package is
 * not installed, throws a {@link MissingPackageError} that names it and the install command.
 */
export async function importOptional<T>(
  packageName: string,
  feature: string,
  load: () => Promise<T>,
): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (isMissingPackage(error, packageName)) throw new MissingPackageError(packageName, feature, error);
    throw error;
  }
}

/**
 * Checks that every specifier resolves, without loading any (a command checks its packages at start-up
 * rather than failing at the first request); the error names all the missing ones in one command.
 */
export function requirePackages(specifiers: readonly string[], feature: string): void {
  const missing: string[] = [];
  let cause: unknown;
  for (const specifier of specifiers) {
    try {
      import.meta.resolve(specifier);
    } catch (error) {
      const name = packageOf(specifier);
      if (!missing.includes(name)) missing.push(name);
      cause ??= error;
    }
  }
  if (missing.length > 0) throw new MissingPackageError(missing.join(' '), feature, cause);
}
