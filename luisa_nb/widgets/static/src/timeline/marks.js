// What the timeline draws over its bars: host reads (▼) and writes (▲) on the host lane
// with dashed links to their commands, hazard arrows, and the selection's outlines.

import { FONT } from "./format.js";
import { LABEL_WIDTH, MIN_BAR } from "./geometry.js";
import { LATENT, firstAtOrAfter, hostOrder, rowsOf } from "./records.js";

// The host reads/writes in view: [from, to) into hostOrder(records).
function markersInView(g, records) {
  const order = hostOrder(records);
  const from = firstAtOrAfter(order.times, g.view.t0);
  const to = firstAtOrAfter(order.times, g.view.t1 + 1e-9);
  return { order, from, to };
}

// Host reads (▼, upload colour) and host writes (▲, download colour), one per pixel
// column; returns how many are in view.
export function drawMarkers(ctx, g, records, colors) {
  const { columns } = records;
  const { order, from, to } = markersInView(g, records);
  const seen = new Uint8Array(Math.ceil(g.plotWidth) + 2);
  const y = g.markerY();
  for (let k = from; k < to; k++) {
    const row = order.rows[k];
    const x = g.xOf(order.times[k]);
    const bit = columns.kind[row] === 1 ? 2 : 1;
    const c = Math.floor(x - LABEL_WIDTH);
    if (seen[c] & bit) continue;
    seen[c] |= bit;
    ctx.fillStyle = colors[columns.kind[row]];
    ctx.beginPath();
    if (bit === 1) {
      ctx.moveTo(x - 5, y - 5);
      ctx.lineTo(x + 5, y - 5);
      ctx.lineTo(x, y + 3);
    } else {
      ctx.moveTo(x - 5, y + 3);
      ctx.lineTo(x + 5, y + 3);
      ctx.lineTo(x, y - 5);
    }
    ctx.fill();
  }
  return to - from;
}

// A dashed line from each host read/write marker to its command's bar, under the bars,
// when few markers are in view.
export function drawLinks(ctx, g, records, theme) {
  const { columns } = records;
  const { order, from, to } = markersInView(g, records);
  if (to - from > 200) return;
  ctx.save();
  ctx.strokeStyle = theme.fgMuted;
  ctx.globalAlpha = 0.55;
  ctx.setLineDash([3, 3]);
  for (let k = from; k < to; k++) {
    const row = order.rows[k];
    const [barY, barH] = g.barBox(columns.lane[row]);
    ctx.beginPath();
    ctx.moveTo(g.xOf(order.times[k]), g.markerY() + 4);
    ctx.lineTo(g.xOf(columns.start[row]), barY + barH / 2);
    ctx.stroke();
  }
  ctx.restore();
}

// The curve of a hazard arrow: from (x1, y1) to (x2, y2) through control point (cx, cy).
function arrowPath(g, arrow) {
  const x1 = g.xOf(arrow.from.time);
  const x2 = g.xOf(arrow.to.time);
  const y1 = arrow.from.lane === 0 ? g.markerY() : g.barBox(arrow.from.lane)[0] + 4;
  const y2 = arrow.to.lane === 0 ? g.markerY() : g.barBox(arrow.to.lane)[0] + 4;
  const lift = arrow.from.lane === 0 && arrow.to.lane === 0 ? g.AXIS_HEIGHT + 4 : Math.min(y1, y2) - 14;
  return { x1, y1, x2, y2, cx: (x1 + x2) / 2, cy: lift };
}

// Each hazard's arrow, red (amber when latent), thicker when `selected`. Every
// occurrence of a place is marked; the first one in view of each place carries its
// label ("STALE_UPLOAD ×5000", from `findings`). The bar of each later command (the
// stale upload) of an arrow in view is underlined in the arrow's colour, so that a bar
// a few pixels wide is seen. Returns {drawn, paths, labelled, outlined}: how many
// arrows are in view, every arrow's {index, path}, how many were labelled and how many
// bars underlined.
export function drawHazards(ctx, g, hazards, theme, selected, findings = [], records = null) {
  const paths = [];
  const labelled = new Set();
  const outlined = new Map(); // command id -> colour
  let drawn = 0;
  for (const hazard of hazards) {
    if (!hazard.arrow) continue;
    const p = arrowPath(g, hazard.arrow);
    paths.push({ index: hazard.index, path: p });
    const lo = Math.min(p.x1, p.x2);
    const hi = Math.max(p.x1, p.x2);
    if (hi < LABEL_WIDTH || lo > g.width) continue;
    drawn++;
    ctx.save();
    ctx.beginPath();
    ctx.rect(LABEL_WIDTH, 0, g.width - LABEL_WIDTH, g.height);
    ctx.clip();
    const color = hazard.kind === LATENT ? theme.latent : theme.hazard;
    outlined.set(hazard.command_ids[hazard.command_ids.length - 1], color);
    ctx.strokeStyle = color;
    ctx.fillStyle = color;
    ctx.lineWidth = hazard.index === selected ? 3.5 : 2;
    ctx.beginPath();
    ctx.moveTo(p.x1, p.y1);
    ctx.quadraticCurveTo(p.cx, p.cy, p.x2, p.y2);
    ctx.stroke();
    const angle = Math.atan2(p.y2 - p.cy, p.x2 - p.cx);
    ctx.beginPath();
    ctx.moveTo(p.x2, p.y2);
    ctx.lineTo(p.x2 - 10 * Math.cos(angle - 0.4), p.y2 - 10 * Math.sin(angle - 0.4));
    ctx.lineTo(p.x2 - 10 * Math.cos(angle + 0.4), p.y2 - 10 * Math.sin(angle + 0.4));
    ctx.closePath();
    ctx.fill();
    ctx.beginPath();
    ctx.arc(p.x1, p.y1, 3.5, 0, 2 * Math.PI);
    ctx.fill();
    const group = hazard.group === null || hazard.group === undefined ? -1 : hazard.group;
    if (!labelled.has(group) && p.cx >= LABEL_WIDTH && p.cx <= g.width) {
      labelled.add(group);
      const finding = findings[group];
      const count = finding && finding.count > 1 ? ` ×${finding.count}` : "";
      ctx.font = FONT;
      ctx.textBaseline = "bottom";
      ctx.textAlign = "center";
      ctx.fillText(`${hazard.kind}${count}`, p.cx, Math.max(p.cy, 12));
    }
    ctx.restore();
  }
  let bars = 0;
  if (records && outlined.size && outlined.size <= OUTLINE_LIMIT) {
    ctx.save();
    for (const row of rowsOf(records, [...outlined.keys()])) {
      const box = rectOfRow(g, records, row);
      if (box.x + box.w < LABEL_WIDTH || box.x > g.width) continue;
      ctx.fillStyle = outlined.get(records.columns.id[row]);
      ctx.fillRect(box.x - 2, box.y + box.h + 1, box.w + 4, 3);
      bars++;
    }
    ctx.restore();
  }
  return { drawn, paths, labelled: labelled.size, outlined: bars };
}

// More stale uploads in view than this are not underlined one by one (zoomed out, the
// arrows say enough).
const OUTLINE_LIMIT = 500;

// The box of row `row`'s bar as drawn: at least MIN_BAR wide, centred where widened.
export function rectOfRow(g, records, row) {
  const { columns } = records;
  const [y, h] = g.barBox(columns.lane[row]);
  const x0 = g.xOf(columns.start[row]);
  const x1 = g.xOf(columns.start[row] + columns.duration[row]);
  const w = Math.max(x1 - x0, MIN_BAR);
  return { x: x1 - x0 >= MIN_BAR ? x0 : x0 - (w - (x1 - x0)) / 2, y, w, h };
}

// An outline around the bars of the commands `ids`, and a ring around their host markers.
export function drawSelection(ctx, g, records, theme, ids) {
  const { columns } = records;
  ctx.save();
  ctx.beginPath();
  ctx.rect(LABEL_WIDTH, 0, g.width - LABEL_WIDTH, g.height);
  ctx.clip();
  for (const row of rowsOf(records, ids)) {
    const box = rectOfRow(g, records, row);
    ctx.strokeStyle = theme.fg;
    ctx.lineWidth = 2;
    ctx.strokeRect(box.x - 1, box.y - 1, box.w + 2, box.h + 2);
    if (!Number.isNaN(columns.host[row])) {
      const x = g.xOf(columns.start[row] + columns.host[row]);
      ctx.beginPath();
      ctx.arc(x, g.markerY() - 1, 7, 0, 2 * Math.PI);
      ctx.stroke();
    }
  }
  ctx.restore();
}
