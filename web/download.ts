/** Offers `content` as a file download named `name` (an object URL, revoked after the click). */
export function download(content: string | Uint8Array, name: string, type: string): void {
  const blob = new Blob([content as BlobPart], { type });
  const link = document.createElement('a');
  link.href = URL.createObjectURL(blob);
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
}
