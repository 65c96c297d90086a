/**
 * Charts of benchmark runs as PNG files: panels of time series stacked vertically, described in Vega-Lite,
 * compiled to Vega, rendered to SVG headless (no canvas, no browser) and rasterised by resvg. A plotting
 * library rather than hand-drawn SVG: axes, ticks, legends and titles come out right for any data.
 */
import { writeFile } from 'node:fs/promises';
import { Resvg } from '@resvg/resvg-js';
import * as vega from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';

/** One point of a series: `x` in the panel's x unit (e.g. minutes since the start), `value` in its y unit. */
export interface SeriesPoint {
  x: number;
  series: string;
  value: number | null;
}

/** A panel: one line per series, its own title, axis titles (with units) and legend. */
export interface Panel {
  title: string;
  /** The y axis title, with its unit: `MiB`, `jobs`, `ms`. */
  yTitle: string;
  points: readonly SeriesPoint[];
  /** Draw the series as steps (counts per interval) instead of straight segments; default false. */
  steps?: boolean;
  /** Logarithmic y scale (for series that span orders of magnitude); default false. */
  log?: boolean;
  /** Mark every point on the lines (for series of a few measurements each); default false. */
  markers?: boolean;
  /** The y axis from and to (panels that are compared share one); default: fitted to the points. */
  yDomain?: readonly [number, number];
  /** The y axis ticks, when the default ones are too sparse (a log scale's); default: the library's. */
  yTicks?: readonly number[];
}

/** A chart: a title and subtitle above its panels. */
export interface Chart {
  title: string;
  /** One line, or several (one per element). */
  subtitle?: string | readonly string[];
  /** The x axis title of every panel, with its unit. */
  xTitle: string;
  panels: readonly Panel[];
  /** Width of the plotting area of each panel, px before the 2× zoom; default 760. */
  width?: number;
  /** Height of each panel, px before the 2× zoom; default 150. */
  panelHeight?: number;
}

/** The Vega-Lite specification of a chart: one layer per panel, each with an independent colour legend. */
export function chartSpec(chart: Chart): TopLevelSpec {
  const width = chart.width ?? 760;
  const height = chart.panelHeight ?? 150;
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: {
      text: chart.title,
      ...(chart.subtitle === undefined ? {} : { subtitle: [chart.subtitle].flat() }),
      fontSize: 16,
    },
    config: { font: 'DejaVu Sans, Arial, sans-serif', legend: { orient: 'right', labelLimit: 260 } },
    resolve: { scale: { color: 'independent' }, legend: { color: 'independent' } },
    vconcat: chart.panels.map((panel) => ({
      title: { text: panel.title, anchor: 'start', fontSize: 13 },
      width,
      height,
      data: { values: panel.points.filter((point) => point.value !== null && Number.isFinite(point.value)) },
      mark: {
        type: 'line',
        interpolate: panel.steps === true ? 'step-after' : 'linear',
        strokeWidth: 1.5,
        ...(panel.markers === true ? { point: true } : {}),
      },
      encoding: {
        x: { field: 'x', type: 'quantitative', title: chart.xTitle, scale: { nice: false } },
        y: {
          field: 'value',
          type: 'quantitative',
          title: panel.yTitle,
          ...(panel.log === true || panel.yDomain !== undefined
            ? {
                scale: {
                  ...(panel.log === true ? { type: 'symlog' } : {}),
                  ...(panel.yDomain === undefined ? {} : { domain: [...panel.yDomain] }),
                },
              }
            : {}),
          ...(panel.yTicks === undefined ? {} : { axis: { values: [...panel.yTicks] } }),
        },
        color: { field: 'series', type: 'nominal', title: null },
      },
    })),
  } as TopLevelSpec;
}

/** Renders a Vega-Lite specification to PNG bytes (2× zoom, white background). */
export async function renderPng(spec: TopLevelSpec): Promise<Buffer> {
  const view = new vega.View(vega.parse(compile(spec).spec), { renderer: 'none' });
  try {
    const svg = await view.toSVG();
    return Buffer.from(new Resvg(svg, { fitTo: { mode: 'zoom', value: 2 }, background: 'white' }).render().asPng());
  } finally {
    view.finalize();
  }
}

/** Draws `chart` into the PNG file at `path`. */
export async function writeChart(path: string, chart: Chart): Promise<void> {
  await writeFile(path, await renderPng(chartSpec(chart)));
}
