/** An error's message, with its cause's message when it has one (`fetch failed: connect ECONNREFUSED …`). */
export function errorText(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
    return `${error.message}${cause}`;
  }
  return String(error);
}
