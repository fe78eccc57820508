import { TokenwireError } from '../errors.ts';

/**
 * What the body stream errors with under the `cut-after` fault: the connection broke with no
 * terminal event. In-process, the reader's `read()` rejects with it; a node adapter serving the sim
 * should destroy the socket when the body errors, so an HTTP client sees a connection cut mid-body.
 */
export class SimCutError extends TokenwireError {
  readonly outputTokens: number;

  constructor(outputTokens: number) {
    super(
      'sim-connection-cut',
      `tokenwire sim: connection cut after ${outputTokens} tokens (fault cut-after)`,
    );
    this.name = 'SimCutError';
    this.outputTokens = outputTokens;
  }
}
