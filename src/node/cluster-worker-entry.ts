/**
 * What a `serve --workers` worker runs: the CLI (argv as the primary gave it), then lets go of the
 * cluster's IPC channel. That channel keeps a worker alive after the command returns — after its
 * shutdown, or an error before it ever listened — and the primary would wait on it forever; it cannot be
 * let go of sooner, since a worker's listen() is itself a request to the primary over the channel.
 */
import cluster from 'node:cluster';

// Imported by path (the CLI is the entry point; nothing imports it statically). Its top-level await
// is the whole command: this resolves when the command has returned.
const extension = import.meta.url.endsWith('.ts') ? 'ts' : 'js';
await import(new URL(`../cli/bin.${extension}`, import.meta.url).href);
// The cluster's own disconnect: a bare process.disconnect() makes node:cluster exit the worker with 0,
// whatever exit code the command set.
if (process.connected) cluster.worker?.disconnect();
