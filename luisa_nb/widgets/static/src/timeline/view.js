// The span of time the timeline shows, {t0, t1} in µs: where it opens, how zoom and pan
// move it, and where it goes to bring a hazard or a command into view. Every function
// returns a new view; none keeps one.

import { rowsOf } from "./records.js";

// [first, last] time of the trace.
export function extent(summary) {
  return (summary.meta && summary.meta.extent) || [0, 1];
}

// The whole trace, with a margin.
export function fullView(summary) {
  const [t0, t1] = extent(summary);
  const span = Math.max(t1 - t0, 1e-3);
  return { t0: t0 - span * 0.02, t1: t1 + span * 0.02 };
}

// The view [t0, t1], its span kept between 1e-4 µs and 4x the trace, its centre inside
// the trace.
export function clampView(summary, t0, t1) {
  const [e0, e1] = extent(summary);
  const limit = Math.max(e1 - e0, 1e-3) * 4;
  const span = Math.min(Math.max(t1 - t0, 1e-4), limit);
  const centre = Math.min(Math.max((t0 + t1) / 2, e0), e1);
  return { t0: centre - span / 2, t1: centre + span / 2 };
}

// A view showing [lo, hi] with a margin of `margin` of its length on each side.
function viewAround(summary, [lo, hi], margin) {
  const pad = Math.max(hi - lo, 1e-3) * margin;
  return clampView(summary, lo - pad, hi + pad);
}

// The times hazard `hazard` spans: its arrow's ends and its commands' bars.
function hazardSpan(records, hazard) {
  const times = [];
  if (hazard.arrow) times.push(hazard.arrow.from.time, hazard.arrow.to.time);
  const { start, duration } = records.columns;
  for (const row of rowsOf(records, hazard.command_ids)) {
    times.push(start[row], start[row] + duration[row]);
  }
  return times.length ? [Math.min(...times), Math.max(...times)] : null;
}

// The first hazard with its commands and arrow filling most of the plot; the whole
// trace when there is no hazard.
export function initialView(summary, hazards, records) {
  for (const hazard of hazards) {
    const span = hazardSpan(records, hazard);
    if (span) return viewAround(summary, span, 0.15);
  }
  return fullView(summary);
}

// Whether [lo, hi] lies inside `view`, off its edges, and fills at least `share` of it.
function comfortable(view, lo, hi, share) {
  const span = view.t1 - view.t0;
  const margin = span * 0.03;
  return lo >= view.t0 + margin && hi <= view.t1 - margin && hi - lo >= share * span;
}

// `view` zoomed by `factor` (< 1: in) about time `anchor`.
export function zoomedView(summary, view, factor, anchor) {
  const t0 = anchor - (anchor - view.t0) * factor;
  const t1 = anchor + (view.t1 - anchor) * factor;
  return clampView(summary, t0, t1);
}

// `view` panned by `fraction` of its span (> 0: later).
export function pannedView(summary, view, fraction) {
  const shift = fraction * (view.t1 - view.t0);
  return clampView(summary, view.t0 + shift, view.t1 + shift);
}

// A view showing `hazard` (its arrow and both commands' bars, with a margin), or null
// when `view` already does, comfortably.
export function hazardView(summary, records, view, hazard) {
  const span = hazard ? hazardSpan(records, hazard) : null;
  if (!span || comfortable(view, span[0], span[1], 0.25)) return null;
  return viewAround(summary, span, 0.15);
}

// A view showing command `id`, with its host read or write when that is close enough to
// show both, or null when `view` (drawn `plotWidth` pixels wide) already does,
// comfortably (inside, and at least 4 pixels wide unless an instant): panned there at
// this zoom when that shows it, else zoomed.
export function commandView(summary, records, view, plotWidth, id) {
  const [row] = rowsOf(records, [id]);
  if (row === undefined) return null;
  const { columns } = records;
  const start = columns.start[row];
  const end = start + columns.duration[row];
  const host = start + columns.host[row];
  let [lo, hi] = [start, end];
  if (!Number.isNaN(host) && Math.max(end, host) - Math.min(start, host) <= 20 * (end - start)) {
    [lo, hi] = [Math.min(start, host), Math.max(end, host)];
  }
  const span = view.t1 - view.t0;
  const wide = end === start || ((end - start) / span) * plotWidth >= 4;
  if (wide && comfortable(view, lo, hi, 0)) return null;
  if (wide && hi - lo <= 0.8 * span) {
    return clampView(summary, (lo + hi) / 2 - span / 2, (lo + hi) / 2 + span / 2);
  }
  return viewAround(summary, [lo, hi], 1);
}
