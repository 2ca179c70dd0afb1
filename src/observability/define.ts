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
    const { zero, ...options } = definition;
    const counter = new client.Counter<L>({
      ...options,
      registers: [this.registry],
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

/** Each of `values` as the label set `{ [label]: value }`: a fixed list's zero series. */
export function each<L extends string>(label: L, values: readonly string[]): Array<Record<L, string>> {
  return values.map((value) => ({ [label]: value }) as Record<L, string>);
}
