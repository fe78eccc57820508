/**
 * Serves the simulator in its own process, for bench tests that need the load generator and the
 * server on different cores: `node sim-process.js '{"ttftMs":100,...}'` prints the base URL on its
 * first line, then serves until stdin closes (so it never outlives the test that started it).
 */
import { serve } from '../../src/node/serve.ts';
import { createSim } from '../../src/sim/index.ts';

const timing = JSON.parse(process.argv[2] ?? '{}') as Record<string, number>;
const sim = createSim({ timing: { jitter: 0, loadMs: 0, ...timing } });
const served = await serve(sim.fetch, { host: '127.0.0.1', port: 0 });
process.stdout.write(`${served.url}\n`);
process.stdin.resume();
process.stdin.on('end', () => {
  void served.close().then(() => process.exit(0));
});
