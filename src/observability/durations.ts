/**
 * The duration histograms observed on every request (`gateway_request_duration_seconds` by operation,
 * `gateway_upstream_request_duration_seconds` by backend, `gateway_rate_limit_store_duration_seconds`),
 * kept in plain numbers, because prom-client's
 * `Histogram` hashes the labels and keys its buckets by number-to-string conversions on every
 * observation. Here each label value's series is a bucket count array, a sum and a count, found
 * once; when scraped, the series are handed to prom-client's registry in the form its own histograms
 * export (`get()`), so the text format, the cluster aggregation (summed) and the series are
 * prom-client's as before.
 */

/** One label value's durations: what each request adds to. */
export class DurationSeries {
  /** Observations at or below each bound (not cumulative); the last slot holds those above every bound. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(private readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  /** Adds one duration (seconds) to its bucket, as prom-client does: the first bound it does not exceed. */
  observe(seconds: number): void {
    const { bounds } = this;
    let i = 0;
    while (i < bounds.length && seconds > (bounds[i] as number)) i++;
    (this.counts[i] as number)++;
    this.sum += seconds;
    this.count++;
  }

  reset(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
  }
}

/** One exported sample, as prom-client's histograms give theirs from `get()`. */
interface Sample {
  readonly labels: Readonly<Record<string, string | number>>;
  readonly value: number;
  readonly metricName: string;
}

/**
 * A histogram with one label, or none (`label` undefined: one series, asked for as `series('')`): registered in a prom-client registry like any metric (`name`, `get`,
 * `reset`).
 */
export class DurationHistogram {
  readonly type = 'histogram';
  /** Workers' series are summed, as prom-client does for its histograms. */
  readonly aggregator = 'sum';
  readonly #bounds: readonly number[];
  readonly #series = new Map<string, DurationSeries>();

  constructor(
    readonly name: string,
    readonly help: string,
    /** The one label (`operation`, `backend`), or none. */
    private readonly label: string | undefined,
    bounds: readonly number[],
  ) {
    this.#bounds = [...bounds].sort((a, b) => a - b);
    // Without a label its one series is exported from the first scrape, at 0, as prom-client's is.
    if (label === undefined) this.series('');
  }

  /** The series of label value `value`, made on its first observation (kept: its observer holds it). */
  series(value: string): DurationSeries {
    let series = this.#series.get(value);
    if (series === undefined) {
      series = new DurationSeries(this.#bounds);
      this.#series.set(value, series);
    }
    return series;
  }

  /** The series as prom-client's histograms give theirs: cumulative buckets, `+Inf`, sum and count. */
  async get() {
    const values: Sample[] = [];
    const bucket = `${this.name}_bucket`;
    for (const [value, series] of this.#series) {
      const labels: Record<string, string> = this.label === undefined ? {} : { [this.label]: value };
      let cumulative = 0;
      this.#bounds.forEach((le, i) => {
        cumulative += series.counts[i] as number;
        values.push({ labels: { le, ...labels }, value: cumulative, metricName: bucket });
      });
      values.push({ labels: { le: '+Inf', ...labels }, value: series.count, metricName: bucket });
      values.push({ labels, value: series.sum, metricName: `${this.name}_sum` });
      values.push({ labels, value: series.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** Back to zero (prom-client's `registry.resetMetrics()`); the series stay, as the recorder holds them. */
  reset(): void {
    for (const series of this.#series.values()) series.reset();
  }
}
