// What is under the pointer: a bar, a host read/write marker or a hazard arrow. `g` is
// the geometry of the view drawn, `paths` the hazard arrows' {index, path} of that draw.

import { LABEL_WIDTH, MIN_BAR } from "./geometry.js";
import { rectOfRow } from "./marks.js";
import { firstAtOrAfter, hostOrder, lowerBound } from "./records.js";

// Pointer distances (CSS pixels) that still count as on a bar or a marker.
const HIT_PIXELS = 4;

function nearCurve(p, x, y) {
  for (let k = 0; k <= 24; k++) {
    const t = k / 24;
    const px = (1 - t) * (1 - t) * p.x1 + 2 * (1 - t) * t * p.cx + t * t * p.x2;
    const py = (1 - t) * (1 - t) * p.y1 + 2 * (1 - t) * t * p.cy + t * t * p.y2;
    if (Math.hypot(px - x, py - y) <= 6) return true;
  }
  return false;
}

// The row whose bar, as drawn (at least MIN_BAR wide), is at (x, y) in `lane`, or within
// HIT_PIXELS of it; of several, the nearest, then the narrowest (a thin bar drawn over a
// neighbour's edge wins there), then the one centred nearest x.
function barAt(g, records, lane, x, y) {
  const [barY, barH] = g.barBox(lane);
  if (y < barY - 3 || y > barY + barH + 3) return null;
  const { columns, byLane, maxDuration } = records;
  const perPixel = (g.view.t1 - g.view.t0) / g.plotWidth;
  const t = g.timeOf(x);
  const reach = (HIT_PIXELS + MIN_BAR) * perPixel;
  const rows = byLane[lane];
  let best = null;
  let i = lowerBound(rows, columns.start, t - reach - maxDuration[lane]);
  for (; i < rows.length; i++) {
    const row = rows[i];
    const start = columns.start[row];
    if (start > t + reach) break;
    const box = rectOfRow(g, records, row);
    const gap = x < box.x ? box.x - x : x > box.x + box.w ? x - box.x - box.w : 0;
    if (gap > HIT_PIXELS) continue;
    const offset = Math.abs(box.x + box.w / 2 - x);
    const better =
      !best ||
      gap < best.gap ||
      (gap === best.gap && (box.w < best.w || (box.w === best.w && offset < best.offset)));
    if (better) best = { row, gap, w: box.w, offset };
  }
  return best ? best.row : null;
}

// The host read/write marker nearest (x, y) on the host lane, or null.
function markerAt(g, records, x, y) {
  if (Math.abs(y - g.markerY()) > 7) return null;
  const tolerance = (HIT_PIXELS / g.plotWidth) * (g.view.t1 - g.view.t0);
  const t = g.timeOf(x);
  const order = hostOrder(records);
  let best = null;
  let k = firstAtOrAfter(order.times, t - tolerance);
  for (; k < order.times.length && order.times[k] <= t + tolerance; k++) {
    const gap = Math.abs(order.times[k] - t);
    if (!best || gap < best.gap) best = { row: order.rows[k], gap };
  }
  return best ? best.row : null;
}

// What is under (x, y) in CSS pixels: {row}, {row, marker} or {hazard}, or null. The
// bar under the pointer in its lane comes first, then host markers, then arrows.
export function hitAt(g, records, paths, x, y) {
  if (x < LABEL_WIDTH) return null;
  const lane = g.laneAt(y);
  if (lane >= 0) {
    const bar = barAt(g, records, lane, x, y);
    if (bar !== null) return { row: bar };
    const marker = lane === 0 ? markerAt(g, records, x, y) : null;
    if (marker !== null) return { row: marker, marker: true };
  }
  for (const { index, path } of paths) if (nearCurve(path, x, y)) return { hazard: index };
  return null;
}

// The CSS-pixel middle of hazard `index`'s arrow, or null.
export function arrowPoint(paths, index) {
  const found = paths.find((h) => h.index === index);
  if (!found) return null;
  const p = found.path;
  return { x: 0.25 * p.x1 + 0.5 * p.cx + 0.25 * p.x2, y: 0.25 * p.y1 + 0.5 * p.cy + 0.25 * p.y2 };
}
