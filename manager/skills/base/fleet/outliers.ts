/**
 * Robust outlier statistics for find_outlier_edges: the modified z-score of Iglewicz and Hoaglin,
 * (value − median) / (1.4826 × MAD), which one extreme edge cannot drag the way it drags a mean and
 * standard deviation.
 *
 * The scale never goes below the metric's resolution (the smallest difference that matters), so an
 * edge less than threshold × resolution from the median is never an outlier. That floor also settles MAD = 0 — more than half
 * the edges report exactly the median, i.e. the peers' spread is below what the metric resolves —
 * without a jump: the score is the same as for a MAD just above 0. Only without a resolution (the
 * statistics used on their own) does MAD = 0 fall back to 1.2533 × the mean absolute deviation.
 */

/** 1 / Φ⁻¹(3/4): makes the MAD estimate the standard deviation of normal data. */
export const MAD_TO_SIGMA = 1.4826;
/** √(π/2): makes the mean absolute deviation estimate the standard deviation of normal data. */
export const MEANAD_TO_SIGMA = 1.2533;
/** Iglewicz and Hoaglin's cut-off for the modified z-score. */
export const DEFAULT_THRESHOLD = 3.5;
/** Fewest edges that can be compared with their peers. */
export const MIN_PEERS = 3;

/** One edge's value of a metric. */
export interface Sample {
  edgeId: string;
  value: number;
}

/** Which estimate the scale came from. */
export type ScaleBasis = "mad" | "mean_abs_dev" | "resolution" | "none";

/** The centre and spread the scores are measured against. */
export interface Spread {
  n: number;
  median: number;
  /** Median absolute deviation from the median. */
  mad: number;
  /** Mean absolute deviation from the median (used when mad is 0). */
  meanAbsDev: number;
  /** The divisor of the scores: an estimate of the standard deviation. */
  scale: number;
  basis: ScaleBasis;
}

/** The median of a non-empty list (the mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  if (!values.length) throw new RangeError("median of no values");
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/** Median, MAD and the scale the scores divide by; `resolution` is the smallest difference that matters for the metric. */
export function spreadOf(values: readonly number[], resolution = 0): Spread {
  const med = median(values);
  const dev = values.map((v) => Math.abs(v - med));
  const mad = median(dev);
  const meanAbsDev = dev.reduce((a, b) => a + b, 0) / dev.length;
  let scale: number;
  let basis: ScaleBasis;
  if (mad > 0 && MAD_TO_SIGMA * mad >= resolution) {
    scale = MAD_TO_SIGMA * mad;
    basis = "mad";
  } else if (resolution > 0) {
    scale = resolution;
    basis = "resolution";
  } else {
    scale = MEANAD_TO_SIGMA * meanAbsDev;
    basis = scale > 0 ? "mean_abs_dev" : "none"; // none: every value equals the median, nothing deviates
  }
  return { n: values.length, median: med, mad, meanAbsDev, scale, basis };
}

/** One edge's score. */
export interface Scored extends Sample {
  /** Signed: above the median is positive. 0 when the scale is 0 (every value equal). */
  score: number;
}

/** Which side counts as an outlier. */
export type Direction = "high" | "low" | "both";

/** Whether a score passes the threshold on the side asked for. */
export function isOutlier(score: number, threshold: number, direction: Direction): boolean {
  if (direction === "high") return score > threshold;
  if (direction === "low") return score < -threshold;
  return Math.abs(score) > threshold;
}

/** Scores every sample against its peers; sorted by |score| descending, ties by edge id. */
export function scoreSamples(samples: readonly Sample[], resolution = 0): { spread: Spread; scored: Scored[] } {
  const spread = spreadOf(
    samples.map((s) => s.value),
    resolution,
  );
  const scored = samples.map((s) => ({ ...s, score: spread.scale > 0 ? (s.value - spread.median) / spread.scale : 0 }));
  scored.sort((a, b) => Math.abs(b.score) - Math.abs(a.score) || (a.edgeId < b.edgeId ? -1 : a.edgeId > b.edgeId ? 1 : 0));
  return { spread, scored };
}

/** The samples whose score passes the threshold, most extreme first, with the spread they were judged against. */
export function findOutliers(samples: readonly Sample[], opts: { threshold?: number; direction?: Direction; resolution?: number } = {}): { spread: Spread; scored: Scored[]; outliers: Scored[] } {
  const threshold = opts.threshold ?? DEFAULT_THRESHOLD;
  const { spread, scored } = scoreSamples(samples, opts.resolution ?? 0);
  return { spread, scored, outliers: scored.filter((s) => isOutlier(s.score, threshold, opts.direction ?? "both")) };
}

/** Rounds for output without turning small values into 0 (4 significant digits below 1). */
export function round(v: number): number {
  if (!Number.isFinite(v)) return v;
  const abs = Math.abs(v);
  if (abs === 0) return 0;
  const digits = abs >= 1 ? 2 : Math.min(10, 3 - Math.floor(Math.log10(abs)));
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}

/** How the scale was obtained, in words. */
export function describeScale(spread: Spread, resolution: number): string {
  switch (spread.basis) {
    case "mad":
      return `scale = 1.4826 × MAD ${round(spread.mad)} = ${round(spread.scale)}`;
    case "mean_abs_dev":
      return `MAD is 0 (more than half the edges report exactly the median), so scale = 1.2533 × mean absolute deviation ${round(spread.meanAbsDev)} = ${round(spread.scale)}`;
    case "resolution":
      return spread.mad === 0
        ? `MAD is 0 (more than half the edges report exactly the median), so scale = the metric's resolution ${round(resolution)}`
        : `1.4826 × MAD ${round(spread.mad)} is below the metric's resolution, so scale = ${round(resolution)}`;
    case "none":
      return "every edge reports the same value, so nothing deviates";
  }
}

/** One line saying why an edge scored what it did. */
export function explain(s: Scored, spread: Spread, ctx: { metric: string; unit: string; threshold: number; resolution: number; detail?: string }): string {
  const side = s.score > 0 ? "above" : s.score < 0 ? "below" : "at";
  const z = `${s.score >= 0 ? "+" : ""}${round(s.score)}`;
  const cmp = Math.abs(s.score) > ctx.threshold ? `beyond the threshold ${ctx.threshold}` : `within the threshold ${ctx.threshold}`;
  return `${ctx.metric} ${round(s.value)}${ctx.unit ? ` ${ctx.unit}` : ""}${ctx.detail ? ` (${ctx.detail})` : ""} is ${side} the median ${round(spread.median)} of ${spread.n} edges; MAD ${round(spread.mad)}; ${describeScale(spread, ctx.resolution)}; z = ${z}, ${cmp}`;
}
