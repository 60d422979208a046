// The timeline's constants and pure helpers (prepended to the timeline renderer, as
// columns.js and overlays.js are): sizes, the light theme the --lnb-* properties fall
// back to, decoding the packed columns, text fitting, ticks and time formatting.

const LANE_HEIGHT = 26;
const HOST_LANE_HEIGHT = 46;
const AXIS_HEIGHT = 22;
const LABEL_WIDTH = 120;
const MIN_BAR = 3;
const HIT_PIXELS = 4;
const LABEL_MIN_WIDTH = 30;
const KEY_ZOOM = 0.75;
const KEY_PAN = 0.2;
const FONT = "11px sans-serif";
// Status marks: a failed (or cancelled) command has a stripe on top, one that never ran
// (skipped, pending) is hatched and outlined.
const FAILED = 1;
const NOT_RUN = 2;
const LATENT = "LATENT_STALE_UPLOAD";
const SVG = "http://www.w3.org/2000/svg";
// Fallbacks for the --lnb-* properties, should a page not define them.
const THEME = {
  fg: "#222",
  fgMuted: "#5f5f5f",
  bg: "#fff",
  bgAlt: "#f0f0f0",
  border: "#ddd",
  hover: "#eef3fb",
  selected: "#ffe9a8",
  selectedFg: "#1a1a1a",
  hazard: "#c62828",
  latent: "#8a5a00",
  ok: "#2e7d32",
  link: "#1565c0",
  markBg: "#ffd6d6",
  markFg: "#5c0000",
};
// Aggregated columns keep the most telling kind: transfers over dispatches over syncs.
const PRIORITY = [9, 9, 6, 5, 7, 2, 3, 3, 2, 1];

function decode(summary, data, hazards) {
  const { count, columns } = decodeColumns(summary, data);
  const lanes = summary.lanes.length;
  const sizes = new Int32Array(lanes);
  for (let i = 0; i < count; i++) sizes[columns.lane[i]]++;
  const byLane = [];
  const maxDuration = new Float64Array(lanes);
  for (let l = 0; l < lanes; l++) byLane.push(new Int32Array(sizes[l]));
  const fill = new Int32Array(lanes);
  for (let i = 0; i < count; i++) {
    const l = columns.lane[i];
    byLane[l][fill[l]++] = i;
    if (columns.duration[i] > maxDuration[l]) maxDuration[l] = columns.duration[i];
  }
  const hazardIds = new Set();
  for (const hazard of hazards) {
    for (const id of hazard.command_ids) hazardIds.add(id);
  }
  const statusMark = new Uint8Array(256);
  (summary.statuses || []).forEach((name, code) => {
    if (name === "failed" || name === "cancelled") statusMark[code] = FAILED;
    else if (name === "skipped" || name === "pending") statusMark[code] = NOT_RUN;
  });
  return { count, columns, byLane, maxDuration, hazardIds, statusMark, hostOrder: null };
}

// The --lnb-* colours in effect on `element`, each with its fallback when empty.
function readTheme(element) {
  const style = getComputedStyle(element);
  const theme = {};
  for (const [key, fallback] of Object.entries(THEME)) {
    const name = `--lnb-${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
    theme[key] = style.getPropertyValue(name).trim() || fallback;
  }
  return theme;
}

// Near-black or white, whichever contrasts more with the "#rrggbb" colour `color`.
function inkOn(color) {
  if (!/^#[0-9a-f]{6}$/i.test(color)) return "#111";
  const channel = (i) => {
    const c = parseInt(color.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
  };
  const luminance = 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
  return (luminance + 0.05) / 0.0556 >= 1.05 / (luminance + 0.05) ? "#111" : "#fff";
}

// `text` cut to fit `room` pixels in the context's font, with an ellipsis; "" if nothing
// fits. `widths` caches the full widths.
function fitText(ctx, text, room, widths) {
  if (room < 12) return "";
  let full = widths.get(text);
  if (full === undefined) {
    full = ctx.measureText(text).width;
    widths.set(text, full);
  }
  if (full <= room) return text;
  let lo = 0;
  let hi = text.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (ctx.measureText(`${text.slice(0, mid)}…`).width <= room) lo = mid;
    else hi = mid - 1;
  }
  return lo ? `${text.slice(0, lo)}…` : "";
}

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

// The first time of a sorted array at or after `value` (binary search).
function firstAtOrAfter(times, value) {
  let lo = 0;
  let hi = times.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (times[mid] < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// With `step` so small that an absolute label would need many decimals, ticks show an
// offset from a round base time (returned); else null.
function axisBase(first, step) {
  const size = Math.abs(first);
  const scale = size >= 1e6 ? 1e6 : size >= 1e3 ? 1e3 : 1;
  if (step / scale >= 1e-4) return null;
  const unit = step * 1000;
  return Math.floor(first / unit) * unit;
}

// A time in the unit its size calls for; `step` (the axis tick) sets the decimals.
function formatTime(us, step) {
  const size = Math.abs(us);
  const [scale, unit] = size >= 1e6 ? [1e6, "s"] : size >= 1e3 ? [1e3, "ms"] : [1, "µs"];
  const resolution = step === undefined ? Math.max(size / 1e4, 1e-3) : step;
  const decimals = Math.min(Math.max(Math.ceil(-Math.log10(resolution / scale)), 0), 6);
  return `${(us / scale).toFixed(decimals)} ${unit}`;
}

function niceStep(span, pixels) {
  const raw = span / Math.max(pixels / 90, 1);
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (m * power >= raw) return m * power;
  return 10 * power;
}

function lowerBound(rows, start, value) {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (start[rows[mid]] < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function registry() {
  const root = (globalThis.__luisa_nb = globalThis.__luisa_nb || {});
  root.timelines = root.timelines || [];
  return root;
}
