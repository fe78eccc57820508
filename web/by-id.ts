/** The page's element with this id; the page is broken (and says which id) when it has none. */
export function byId<T extends HTMLElement>(id: string): T {
  const element = document.getElementById(id);
  if (element === null) throw new Error(`the page has no #${id}`);
  return element as T;
}

/** Shows a line in the status bar under the prompt. */
export function showStatus(text: string): void {
  byId<HTMLElement>('status').textContent = text;
}
