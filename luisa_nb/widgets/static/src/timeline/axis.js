// Time on the timeline: the grid, the axis strip on top, and the cursor layer (the
// pointer's time and a measured span), which redraws alone as the pointer moves.

import { FONT, axisBase, formatTime, ticks } from "./format.js";
import { AXIS_HEIGHT, LABEL_WIDTH } from "./geometry.js";

// Vertical grid lines at the axis ticks, under everything else.
export function drawGrid(ctx, g, theme) {
  ctx.strokeStyle = theme.border;
  ctx.beginPath();
  for (const t of ticks(g.view, g.plotWidth)) {
    const x = Math.round(g.xOf(t)) + 0.5;
    ctx.moveTo(x, AXIS_HEIGHT - 4);
    ctx.lineTo(x, g.height);
  }
  ctx.stroke();
}

// The time axis on top: a tick and a label every `step`; deep in, labels are offsets
// from a base time shown in the label column (else the number of records, `count`).
// Returns the labels.
export function drawAxis(ctx, g, theme, count) {
  ctx.fillStyle = theme.bg;
  ctx.fillRect(0, 0, g.width, AXIS_HEIGHT - 4);
  const times = ticks(g.view, g.plotWidth);
  const base = times.length ? axisBase(times[0], times.step) : null;
  ctx.font = FONT;
  ctx.textBaseline = "middle";
  ctx.fillStyle = theme.fg;
  const labels = [];
  for (const t of times) {
    const x = Math.round(g.xOf(t));
    ctx.fillRect(x, AXIS_HEIGHT - 8, 1, 4);
    const label = base === null ? formatTime(t, times.step) : `+${formatTime(t - base, times.step)}`;
    ctx.fillText(label, x + 3, AXIS_HEIGHT / 2 - 2);
    labels.push(label);
  }
  ctx.fillStyle = theme.bg;
  ctx.fillRect(0, 0, LABEL_WIDTH - 1, AXIS_HEIGHT);
  ctx.fillStyle = theme.fgMuted;
  const note = base === null ? `${count.toLocaleString()} records` : `${formatTime(base, times.step * 1000)} +`;
  ctx.fillText(note, 6, AXIS_HEIGHT / 2);
  return labels;
}

// A label in a box centred on x in the axis strip, kept inside the plot.
function axisTag(ctx, g, text, x, fill, ink, edge) {
  const w = ctx.measureText(text).width + 8;
  const left = Math.min(Math.max(x - w / 2, LABEL_WIDTH), g.width - w);
  ctx.fillStyle = fill;
  ctx.fillRect(left, 1, w, AXIS_HEIGHT - 6);
  if (edge) {
    ctx.strokeStyle = edge;
    ctx.strokeRect(left + 0.5, 1.5, w - 1, AXIS_HEIGHT - 7);
  }
  ctx.fillStyle = ink;
  ctx.fillText(text, left + 4, AXIS_HEIGHT / 2 - 2);
}

// The cursor layer: the measured span (pointer.measure, {t0, t1}) with its duration, and
// a line at the pointer (pointer.x) with the time under it, whose tag gives way to the
// span's while one is being measured. Returns {measure, cursor}: what it shows.
export function drawCursor(ctx, g, theme, pointer) {
  const { width, height } = g;
  ctx.clearRect(0, 0, width, height);
  ctx.save();
  ctx.beginPath();
  ctx.rect(LABEL_WIDTH, 0, width - LABEL_WIDTH, height);
  ctx.clip();
  ctx.font = FONT;
  ctx.textBaseline = "middle";
  const shown = { measure: null, cursor: null };
  if (pointer.measure) {
    const t0 = Math.min(pointer.measure.t0, pointer.measure.t1);
    const t1 = Math.max(pointer.measure.t0, pointer.measure.t1);
    const [a, b] = [g.xOf(t0), g.xOf(t1)];
    ctx.globalAlpha = 0.16;
    ctx.fillStyle = theme.link;
    ctx.fillRect(a, AXIS_HEIGHT - 4, Math.max(b - a, 1), height);
    ctx.globalAlpha = 1;
    ctx.fillRect(Math.round(a), 0, 1, height);
    ctx.fillRect(Math.round(b), 0, 1, height);
    const text = `Δ ${formatTime(t1 - t0)}`;
    axisTag(ctx, g, text, (a + b) / 2, theme.bg, theme.fg, theme.link);
    shown.measure = { t0, t1, duration: t1 - t0, text };
  }
  if (pointer.x !== null) {
    const time = g.timeOf(pointer.x);
    ctx.fillStyle = theme.fgMuted;
    ctx.fillRect(Math.round(pointer.x), AXIS_HEIGHT - 4, 1, height);
    const text = formatTime(time, ticks(g.view, g.plotWidth).step / 10);
    const drag = pointer.drag;
    if (!(drag && drag.measure && drag.moved)) axisTag(ctx, g, text, pointer.x, theme.fg, theme.bg);
    shown.cursor = { x: pointer.x, time, text };
  }
  ctx.restore();
  return shown;
}
