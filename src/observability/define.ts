/**
 * The one way a metric of the gateway is made: on its registry, with the label sets that exist at 0
 * from the first scrape named in its definition (contract §6: a panel then shows 0, not "No data",
 * after a restart, and `rate()` sees the first increment).
 */
import client, { type Registry } from 'prom-client';

/** What every definition names. */
interface Definition<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly labelNames?: readonly L[];
  /** How cluster workers' values combine (prom-client's aggregators); summed when absent. */
  readonly aggregator?: client.Aggregator;
}

/** A counter's definition: the label sets it exports at 0 from the first scrape. */
interface CounterDefinition<L extends string> extends Definition<L> {
  readonly zero?: ReadonlyArray<Partial<Record<L, string>>>;
  /** Adds what was counted elsewhere, when scraped. */
  collect?(this: client.Counter<L>): void;
}

/** A gauge's definition: `collect` reads its value when scraped. */
interface GaugeDefinition<L extends string> extends Definition<L> {
  collect?(this: client.Gauge<L>): void;
}

interface HistogramDefinition<L extends string> extends Definition<L> {
  readonly buckets: number[];
}

/** A metric prom-client's registry reads though it is not one of its classes (`name`, `get()`, `reset()`). */
export interface OwnMetric {
  readonly name: string;
  get(): Promise<unknown>;
  reset(): void;
}

/** Makes metrics on one registry. */
export class MetricDefinitions {
  constructor(readonly registry: Registry) {}

  counter<L extends string = never>(definition: CounterDefinition<L>): client.Counter<L> {
    const { zero, collect, ...options } = definition;
    const counter = new client.Counter<L>({
      ...options,
      registers: [this.registry],
      collect(this: client.Counter<L>) {
        addCounted(this);
        collect?.call(this);
      },
    } as client.CounterConfiguration<L>);
    for (const labels of zero ?? []) counter.inc(labels, 0);
    return counter;
  }

  gauge<L extends string = never>(definition: GaugeDefinition<L>): client.Gauge<L> {
    return new client.Gauge<L>({ ...definition, registers: [this.registry] } as client.GaugeConfiguration<L>);
  }

  histogram<L extends string = never>(definition: HistogramDefinition<L>): client.Histogram<L> {
    return new client.Histogram<L>({
      ...definition,
      registers: [this.registry],
    } as client.HistogramConfiguration<L>);
  }

  /** Registers a metric of the gateway's own making (the request durations, kept in plain numbers). */
  own<M extends OwnMetric>(metric: M): M {
    this.registry.registerMetric(metric as unknown as client.Metric);
    return metric;
  }
}

/** A counter's series counted per request (`countedChild`), by its label values. */
interface Counted {
  readonly labels: Record<string, string>;
  count: number;
  inc(value?: number): void;
}

const counted = new WeakMap<client.Counter<string>, Map<string, Counted>>();

/**
 * The series `labels` of `counter` (made by `MetricDefinitions.counter`) for a count made on every
 * request: an increment adds to a plain number, handed to prom-client when the counter is scraped.
 * prom-client's own `labels(…).inc()` hashes and checks the labels on every call. The series is
 * exported at 0 from now on; asking again for the same labels gives the same series.
 */
export function countedChild<L extends string>(
  counter: client.Counter<L>,
  labels: Record<L, string>,
): { inc(value?: number): void } {
  let series = counted.get(counter as client.Counter<string>);
  if (series === undefined) {
    series = new Map();
    counted.set(counter as client.Counter<string>, series);
  }
  const key = JSON.stringify(Object.entries(labels).sort());
  let child = series.get(key);
  if (child === undefined) {
    counter.inc(labels as Partial<Record<L, string>>, 0);
    child = {
      labels,
      count: 0,
      inc(value = 1) {
        this.count += value;
      },
    };
    series.set(key, child);
  }
  return child;
}

/** Adds what `countedChild`'s series counted since the last scrape to `counter`. */
function addCounted(counter: client.Counter<string>): void {
  const series = counted.get(counter);
  if (series === undefined) return;
  for (const child of series.values()) {
    if (child.count === 0) continue;
    counter.inc(child.labels, child.count);
    child.count = 0;
  }
}

/** Each of `values` as the label set `{ [label]: value }`: a fixed list's zero series. */
export function each<L extends string>(label: L, values: readonly string[]): Array<Record<L, string>> {
  return values.map((value) => ({ [label]: value }) as Record<L, string>);
}
