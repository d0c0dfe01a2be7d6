import { SamplingDecision, type Sampler, type SamplingResult } from '@opentelemetry/sdk-trace';

/**
 * Keeps a request at `ratio` by a fresh draw of its own, whatever trace id it has. For a request
 * continuing a client's `traceparent`: the trace id is the client's choice, so a sampler that is a
 * function of it (TraceIdRatioBasedSampler) lets the client pick ids that are always, or never, kept.
 */
export class RandomRatioSampler implements Sampler {
  private readonly ratio: number;

  /** `draw` returns a number in [0, 1); tests pass their own. */
  constructor(
    ratio: number,
    private readonly draw: () => number = Math.random,
  ) {
    this.ratio = Number.isNaN(ratio) ? 0 : Math.min(1, Math.max(0, ratio));
  }

  shouldSample(): SamplingResult {
    const keep = this.ratio >= 1 || (this.ratio > 0 && this.draw() < this.ratio);
    return { decision: keep ? SamplingDecision.RECORD_AND_SAMPLED : SamplingDecision.NOT_RECORD };
  }

  toString(): string {
    return `RandomRatio{${this.ratio}}`;
  }
}
