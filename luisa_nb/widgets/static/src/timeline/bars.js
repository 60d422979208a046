// The lanes and their bars: each record a bar from start to finish in its kind's colour,
// labelled where it is wide enough. Zoomed out, bars narrower than MIN_BAR device pixels
// are aggregated into one run per pixel column per lane, so a draw costs O(records in
// view) + O(width x lanes) rects.
//
// `scene` is what a draw reads: {summary, records, theme, colors (by kind), inks (text
// on each kind's colour), patterns (hatching by colour), textWidths (label widths)}.

import { drawGrid } from "./axis.js";
import { FONT, fitText } from "./format.js";
import { LABEL_WIDTH, MIN_BAR } from "./geometry.js";
import { drawLinks } from "./marks.js";
import { FAILED, NOT_RUN, PRIORITY, lowerBound } from "./records.js";

const LABEL_MIN_WIDTH = 30;

// Diagonal hatching in `color`, for the bars of records that never ran.
function hatchPattern(ctx, color) {
  const tile = document.createElement("canvas");
  tile.width = 6;
  tile.height = 6;
  const t = tile.getContext("2d");
  t.strokeStyle = color;
  t.lineWidth = 1.5;
  t.beginPath();
  for (const shift of [-6, 0, 6]) {
    t.moveTo(shift, 6);
    t.lineTo(shift + 6, 0);
  }
  t.stroke();
  return ctx.createPattern(tile, "repeat");
}

// One bar: solid in its kind's colour, a stripe on top if it failed, hatched and
// outlined if it never ran.
function drawBar(ctx, scene, kind, mark, x, y, w, h) {
  const color = scene.colors[kind];
  if (mark === NOT_RUN) {
    if (!scene.patterns.has(color)) scene.patterns.set(color, hatchPattern(ctx, color));
    ctx.fillStyle = scene.patterns.get(color);
    ctx.fillRect(x, y, w, h);
    ctx.strokeStyle = color;
    ctx.lineWidth = 1;
    ctx.strokeRect(x + 0.5, y + 0.5, Math.max(w - 1, 1), h - 1);
    return;
  }
  ctx.fillStyle = color;
  ctx.fillRect(x, y, w, h);
  if (mark === FAILED) {
    ctx.fillStyle = scene.theme.hazard;
    ctx.fillRect(x, y, w, 3);
  }
}

// Calls visit(value, first, end) for each run of one non-negative value over adjacent
// pixel columns [first, end); returns how many runs there were.
function eachRun(values, plot, visit) {
  let runs = 0;
  let c = 0;
  while (c <= plot) {
    const value = values[c];
    if (value < 0) {
      c++;
      continue;
    }
    let end = c + 1;
    while (end <= plot && values[end] === value) end++;
    visit(value, c, end);
    runs++;
    c = end;
  }
  return runs;
}

// Alternate lane backgrounds and the lines between lanes.
function drawLaneBackgrounds(ctx, g, theme) {
  for (let lane = 0; lane < g.lanes.length; lane++) {
    const top = g.laneTop(lane);
    const height = g.laneHeight(lane);
    if (lane % 2) {
      ctx.globalAlpha = 0.6;
      ctx.fillStyle = theme.bgAlt;
      ctx.fillRect(0, top, g.width, height);
      ctx.globalAlpha = 1;
    }
    ctx.strokeStyle = theme.border;
    ctx.beginPath();
    ctx.moveTo(0, top + height - 0.5);
    ctx.lineTo(g.width, top + height - 0.5);
    ctx.stroke();
  }
}

// The bars of `lane` in view, with their labels; adds to `counts`.
function drawLaneBars(ctx, g, scene, lane, counts, columnsOf) {
  const { summary, records, theme, inks, textWidths } = scene;
  const { columns, byLane, maxDuration, statusMark } = records;
  const { view, plotWidth: plot } = g;
  const scale = plot / (view.t1 - view.t0);
  const { column, ghost, failed } = columnsOf;
  const rows = byLane[lane];
  const [y, h] = g.barBox(lane);
  let drawn = 0;
  column.fill(-1);
  ghost.fill(-1);
  failed.fill(-1);
  let i = lowerBound(rows, columns.start, view.t0 - maxDuration[lane]);
  for (; i < rows.length; i++) {
    const row = rows[i];
    const start = columns.start[row];
    if (start > view.t1) break;
    const end = start + columns.duration[row];
    if (end < view.t0) continue;
    drawn++;
    const x0 = (start - view.t0) * scale;
    const x1 = (end - view.t0) * scale;
    const kind = columns.kind[row];
    const mark = statusMark[columns.status[row]];
    if (x1 - x0 >= MIN_BAR) {
      const left = Math.max(x0, -2);
      const right = Math.min(x1, plot + 2);
      const x = LABEL_WIDTH + left;
      const w = Math.max(right - left - 1, 1);
      drawBar(ctx, scene, kind, mark, x, y, w, h);
      counts.rects++;
      if (w >= LABEL_MIN_WIDTH && h >= 12) {
        const from = Math.max(left, 0);
        const room = Math.min(right, plot) - from - 8;
        const text = fitText(ctx, summary.texts[columns.text[row]], room, textWidths);
        if (text) {
          ctx.fillStyle = mark === NOT_RUN ? theme.fg : inks[kind];
          ctx.fillText(text, LABEL_WIDTH + from + 4, y + h / 2 + (mark === FAILED ? 1 : 0));
          counts.labels++;
          if (counts.labelled.length < 200) counts.labelled.push({ id: columns.id[row], text });
        }
      }
    } else {
      const c0 = Math.max(0, Math.floor(x0));
      const c1 = Math.min(plot, Math.floor(x1));
      const held = mark === NOT_RUN ? ghost : column;
      for (let c = c0; c <= c1; c++) {
        if (held[c] < 0 || PRIORITY[kind] > PRIORITY[held[c]]) held[c] = kind;
        if (mark === FAILED) failed[c] = 1;
      }
    }
  }
  counts.rects += eachRun(column, plot, (kind, c, end) => {
    ctx.fillStyle = scene.colors[kind];
    ctx.fillRect(LABEL_WIDTH + c, y, end - c, h);
  });
  // never-run records this narrow still show as a 3-pixel hatched, outlined box
  counts.rects += eachRun(ghost, plot, (kind, c, end) => {
    drawBar(ctx, scene, kind, NOT_RUN, LABEL_WIDTH + c - 1, y, end - c + 2, h);
  });
  counts.rects += eachRun(failed, plot, (flag, c, end) => {
    ctx.fillStyle = theme.hazard;
    ctx.fillRect(LABEL_WIDTH + c, y, end - c, 3);
  });
  counts.laneRecords.push(drawn);
  counts.records += drawn;
}

// The lanes, the grid, the host markers' links and every bar in view, with the lane
// names in the label column; returns {laneRecords, rects, records, labels, labelled}.
export function drawLanes(ctx, g, scene) {
  const { summary, theme, textWidths } = scene;
  const counts = { laneRecords: [], rects: 0, records: 0, labels: 0, labelled: [] };
  // per pixel column: the kind drawn (ran), the kind of records that never ran, failures
  const columnsWide = Math.ceil(g.plotWidth) + 1;
  const columnsOf = {
    column: new Int16Array(columnsWide),
    ghost: new Int16Array(columnsWide),
    failed: new Int16Array(columnsWide),
  };
  drawLaneBackgrounds(ctx, g, theme);
  drawGrid(ctx, g, theme);
  drawLinks(ctx, g, scene.records, theme);
  ctx.font = FONT;
  ctx.textBaseline = "middle";
  for (let lane = 0; lane < summary.lanes.length; lane++) {
    drawLaneBars(ctx, g, scene, lane, counts, columnsOf);
    const top = g.laneTop(lane);
    const height = g.laneHeight(lane);
    ctx.fillStyle = theme.bg;
    ctx.fillRect(0, top, LABEL_WIDTH - 2, height - 1);
    ctx.fillStyle = theme.fg;
    ctx.font = "12px sans-serif";
    const name = lane === 0 ? "host" : summary.lanes[lane].name;
    ctx.fillText(fitText(ctx, name, LABEL_WIDTH - 12, textWidths), 6, top + height / 2);
    ctx.font = FONT;
  }
  ctx.strokeStyle = theme.border;
  ctx.beginPath();
  ctx.moveTo(LABEL_WIDTH - 0.5, g.AXIS_HEIGHT);
  ctx.lineTo(LABEL_WIDTH - 0.5, g.height);
  ctx.stroke();
  return counts;
}
