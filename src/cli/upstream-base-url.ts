/**
 * A base URL for an upstream, from `--upstream` or a config file: http or https, its path kept (a server
 * behind a path-routing proxy), no trailing slash, no query, fragment or credentials (those go in headers:
 * a URL is printed).
 */
export function upstreamBaseUrl(text: string, fail: (reason: string) => never): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return fail(`${JSON.stringify(redactUserInfo(text))} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return fail(`the URL must be http:// or https://, not ${url.protocol}`);
  if (url.username !== '' || url.password !== '')
    return fail('the URL holds credentials: send them as a header (Authorization) instead');
  if (url.search !== '' || url.hash !== '') return fail('the URL must not have a query or a fragment');
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

/** A name for an upstream given only as a URL: `host:port` and its path (`127.0.0.1:9000/vllm`). */
export function upstreamNameFor(baseUrl: string): string {
  const url = new URL(baseUrl);
  return `${url.host}${url.pathname.replace(/\/+$/, '')}`;
}

function redactUserInfo(text: string): string {
  return text.replace(/\/\/[^/@]*@/, '//***@');
}
