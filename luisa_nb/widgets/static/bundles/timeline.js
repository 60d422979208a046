// Generated from luisa_nb/widgets/static/src by js/build.mjs (esbuild); do not edit.

// luisa_nb/widgets/static/src/shared/columns.js
var TYPES = {
  i1: Int8Array,
  u1: Uint8Array,
  i2: Int16Array,
  u2: Uint16Array,
  i4: Int32Array,
  u4: Uint32Array,
  i8: BigInt64Array,
  u8: BigUint64Array,
  f4: Float32Array,
  f8: Float64Array
};
function toArrayBuffer(value) {
  if (!value) return new ArrayBuffer(0);
  if (value instanceof ArrayBuffer) return value;
  if (ArrayBuffer.isView(value)) {
    return value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength);
  }
  return new ArrayBuffer(0);
}
function decodeColumns(summary, data) {
  const buffer = toArrayBuffer(data);
  const count = summary.count || 0;
  const columns = {};
  for (const [name, spec] of Object.entries(summary.layout || {})) {
    columns[name] = new TYPES[spec.dtype](buffer, spec.offset, count);
  }
  return { count, columns };
}
function decodeHazards(layout, data) {
  const buffer = toArrayBuffer(data);
  const count = layout.count || 0;
  const column = {};
  for (const [name, spec] of Object.entries(layout.columns || {})) {
    column[name] = new TYPES[spec.dtype](buffer, spec.offset, spec.length);
  }
  const end = (side, index) => ({
    lane: column[`${side}_lane`][index],
    time: column[`${side}_time`][index],
    command: column[`${side}_command`][index],
    label: layout.labels[column[`${side}_label`][index]]
  });
  const hazards = new Array(count);
  for (let index = 0; index < count; index++) {
    const first = column.ids_from[index];
    const group = column.group[index];
    const upload = column.upload[index];
    hazards[index] = {
      index,
      group: group < 0 ? null : group,
      kind: layout.kinds[column.kind[index]],
      command_ids: Array.from(column.ids.subarray(first, first + column.ids_count[index])),
      upload: upload < 0 ? null : upload,
      arrow: column.arrow[index] ? { from: end("from", index), to: end("to", index) } : null
    };
  }
  return hazards;
}
var decodedHazards = /* @__PURE__ */ new WeakMap();
function modelHazards(model) {
  const layout = model.get("hazard_layout");
  const data = model.get("hazard_data");
  if (!layout || layout.count === void 0 || !data || typeof data !== "object") {
    return model.get("hazards") || [];
  }
  if (!decodedHazards.has(data)) decodedHazards.set(data, decodeHazards(layout, data));
  return decodedHazards.get(data);
}

// luisa_nb/widgets/static/src/shared/dom.js
function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== void 0) node.textContent = text;
  return node;
}

// luisa_nb/widgets/static/src/shared/theme.js
var KEYS = [
  "fg",
  "fgMuted",
  "bg",
  "bgAlt",
  "border",
  "hazard",
  "latent",
  "link",
  "markBg",
  "inkDark",
  "inkLight",
  "range1",
  "range2",
  "range3",
  "range4",
  "compile"
];
function propertyOf(key) {
  return `--lnb-${key.replace(/[A-Z]|\d+/g, (c) => `-${c}`).toLowerCase()}`;
}
function readTheme(element2) {
  let probe = null;
  if (!element2.isConnected && document.body) {
    probe = document.createElement("div");
    probe.className = element2.className;
    probe.hidden = true;
    document.body.append(probe);
  }
  const style = getComputedStyle(probe || element2);
  const theme = {};
  for (const key of KEYS) theme[key] = style.getPropertyValue(propertyOf(key)).trim();
  if (probe) probe.remove();
  return theme;
}

// luisa_nb/widgets/static/src/shared/widget.js
function hideStaticTwins(model) {
  const registry2 = globalThis.__luisa_nb = globalThis.__luisa_nb || {};
  registry2.live = registry2.live || /* @__PURE__ */ new Set();
  for (const id of model.get("_twin_ids") || []) {
    registry2.live.add(id);
    const key = `lnb-twin-hidden-${id}`;
    if (document.getElementById(key)) continue;
    const style = document.createElement("style");
    style.id = key;
    style.textContent = `.lnb-twin[data-lnb-twin~="${id}"] { display: none !important; }`;
    document.head.append(style);
  }
}
function widget(render2) {
  return {
    render(props) {
      hideStaticTwins(props.model);
      return render2(props);
    }
  };
}

// luisa_nb/widgets/static/src/timeline/format.js
var FONT = "11px sans-serif";
function inkOn(color, theme) {
  if (!/^#[0-9a-f]{6}$/i.test(color)) return theme.inkDark;
  const channel = (i) => {
    const c = parseInt(color.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
  };
  const luminance = 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
  return (luminance + 0.05) / 0.0556 >= 1.05 / (luminance + 0.05) ? theme.inkDark : theme.inkLight;
}
function fitText(ctx, text, room, widths) {
  if (room < 12) return "";
  let full = widths.get(text);
  if (full === void 0) {
    full = ctx.measureText(text).width;
    widths.set(text, full);
  }
  if (full <= room) return text;
  let lo = 0;
  let hi = text.length - 1;
  while (lo < hi) {
    const mid = lo + hi + 1 >> 1;
    if (ctx.measureText(`${text.slice(0, mid)}…`).width <= room) lo = mid;
    else hi = mid - 1;
  }
  return lo ? `${text.slice(0, lo)}…` : "";
}
function axisBase(first, step) {
  const size = Math.abs(first);
  const scale = size >= 1e6 ? 1e6 : size >= 1e3 ? 1e3 : 1;
  if (step / scale >= 1e-4) return null;
  const unit = step * 1e3;
  return Math.floor(first / unit) * unit;
}
function formatTime(us, step) {
  const size = Math.abs(us);
  const [scale, unit] = size >= 1e6 ? [1e6, "s"] : size >= 1e3 ? [1e3, "ms"] : [1, "µs"];
  const resolution = step === void 0 ? Math.max(size / 1e4, 1e-3) : step;
  const decimals = Math.min(Math.max(Math.ceil(-Math.log10(resolution / scale)), 0), 6);
  return `${(us / scale).toFixed(decimals)} ${unit}`;
}
function niceStep(span, pixels) {
  const raw = span / Math.max(pixels / 90, 1);
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (m * power >= raw) return m * power;
  return 10 * power;
}
function ticks(view, plotWidth) {
  const step = niceStep(view.t1 - view.t0, plotWidth);
  const first = Math.ceil(view.t0 / step);
  const times = [];
  for (let k = first; k * step <= view.t1 && times.length < 1e3; k++) times.push(k * step);
  times.step = step;
  return times;
}

// luisa_nb/widgets/static/src/timeline/geometry.js
var LANE_HEIGHT = 26;
var HOST_LANE_HEIGHT = 46;
var AXIS_HEIGHT = 22;
var LABEL_WIDTH = 120;
var MIN_BAR = 3;
function laneHeight(lane) {
  return lane === 0 ? HOST_LANE_HEIGHT : LANE_HEIGHT;
}
function laneTop(lane) {
  return lane === 0 ? AXIS_HEIGHT : AXIS_HEIGHT + HOST_LANE_HEIGHT + (lane - 1) * LANE_HEIGHT;
}
function lanesHeight(laneCount) {
  return AXIS_HEIGHT + HOST_LANE_HEIGHT + (laneCount - 1) * LANE_HEIGHT + 4;
}
function laneAt(y, laneCount) {
  if (y < AXIS_HEIGHT) return -1;
  if (y < AXIS_HEIGHT + HOST_LANE_HEIGHT) return 0;
  const lane = 1 + Math.floor((y - AXIS_HEIGHT - HOST_LANE_HEIGHT) / LANE_HEIGHT);
  return lane < laneCount ? lane : -1;
}
function barBox(lane) {
  const top = laneTop(lane);
  if (lane === 0) return [top + HOST_LANE_HEIGHT - 12, 9];
  return [top + 4, LANE_HEIGHT - 8];
}
function markerY() {
  return AXIS_HEIGHT + HOST_LANE_HEIGHT - 20;
}
function plotWidthOf(width) {
  return Math.max(width - LABEL_WIDTH, 10);
}
function geometry(view, width, lanes, theme) {
  const { t0, t1 } = view;
  const plotWidth = plotWidthOf(width);
  return {
    xOf: (t) => LABEL_WIDTH + (t - t0) / (t1 - t0) * plotWidth,
    timeOf: (x) => t0 + (x - LABEL_WIDTH) / plotWidth * (t1 - t0),
    laneTop,
    laneHeight,
    laneAt: (y) => laneAt(y, lanes.length),
    barBox,
    markerY,
    LABEL_WIDTH,
    AXIS_HEIGHT,
    plotWidth,
    width,
    height: lanesHeight(lanes.length),
    view: { t0, t1 },
    lanes,
    theme: { ...theme }
  };
}

// luisa_nb/widgets/static/src/timeline/axis.js
function drawGrid(ctx, g, theme) {
  ctx.strokeStyle = theme.border;
  ctx.beginPath();
  for (const t of ticks(g.view, g.plotWidth)) {
    const x = Math.round(g.xOf(t)) + 0.5;
    ctx.moveTo(x, AXIS_HEIGHT - 4);
    ctx.lineTo(x, g.height);
  }
  ctx.stroke();
}
function drawAxis(ctx, g, theme, count) {
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
  const note = base === null ? `${count.toLocaleString()} records` : `${formatTime(base, times.step * 1e3)} +`;
  ctx.fillText(note, 6, AXIS_HEIGHT / 2);
  return labels;
}
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
function drawCursor(ctx, g, theme, pointer) {
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

// luisa_nb/widgets/static/src/timeline/records.js
var FAILED = 1;
var NOT_RUN = 2;
var LATENT = "LATENT_STALE_UPLOAD";
var PRIORITY = [9, 9, 6, 5, 7, 2, 3, 3, 2, 1];
function decodeRecords(summary, data, hazards) {
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
  const hazardIds = /* @__PURE__ */ new Set();
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
function hostOrder(records) {
  if (records.hostOrder) return records.hostOrder;
  const { columns, count } = records;
  const rows = [];
  for (let i = 0; i < count; i++) if (!Number.isNaN(columns.host[i])) rows.push(i);
  const times = new Float64Array(rows.length);
  rows.sort((a, b) => columns.start[a] + columns.host[a] - (columns.start[b] + columns.host[b]));
  for (let k = 0; k < rows.length; k++) times[k] = columns.start[rows[k]] + columns.host[rows[k]];
  records.hostOrder = { rows: Int32Array.from(rows), times };
  return records.hostOrder;
}
function rowsOf(records, ids) {
  const wanted = new Set(ids);
  const rows = [];
  const { columns, count } = records;
  if (!wanted.size) return rows;
  for (let i = 0; i < count; i++) if (wanted.has(columns.id[i])) rows.push(i);
  return rows;
}
function firstAtOrAfter(times, value) {
  let lo = 0;
  let hi = times.length;
  while (lo < hi) {
    const mid = lo + hi >> 1;
    if (times[mid] < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
function lowerBound(rows, start, value) {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = lo + hi >> 1;
    if (start[rows[mid]] < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// luisa_nb/widgets/static/src/timeline/marks.js
function markersInView(g, records) {
  const order = hostOrder(records);
  const from = firstAtOrAfter(order.times, g.view.t0);
  const to = firstAtOrAfter(order.times, g.view.t1 + 1e-9);
  return { order, from, to };
}
function drawMarkers(ctx, g, records, colors) {
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
function drawLinks(ctx, g, records, theme) {
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
function arrowPath(g, arrow) {
  const x1 = g.xOf(arrow.from.time);
  const x2 = g.xOf(arrow.to.time);
  const y1 = arrow.from.lane === 0 ? g.markerY() : g.barBox(arrow.from.lane)[0] + 4;
  const y2 = arrow.to.lane === 0 ? g.markerY() : g.barBox(arrow.to.lane)[0] + 4;
  const lift = arrow.from.lane === 0 && arrow.to.lane === 0 ? g.AXIS_HEIGHT + 4 : Math.min(y1, y2) - 14;
  return { x1, y1, x2, y2, cx: (x1 + x2) / 2, cy: lift };
}
function drawHazards(ctx, g, hazards, theme, selected, findings = [], records = null) {
  const paths = [];
  const labelled = /* @__PURE__ */ new Set();
  const outlined = /* @__PURE__ */ new Map();
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
    const group = hazard.group === null || hazard.group === void 0 ? -1 : hazard.group;
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
var OUTLINE_LIMIT = 500;
function rectOfRow(g, records, row) {
  const { columns } = records;
  const [y, h] = g.barBox(columns.lane[row]);
  const x0 = g.xOf(columns.start[row]);
  const x1 = g.xOf(columns.start[row] + columns.duration[row]);
  const w = Math.max(x1 - x0, MIN_BAR);
  return { x: x1 - x0 >= MIN_BAR ? x0 : x0 - (w - (x1 - x0)) / 2, y, w, h };
}
function drawSelection(ctx, g, records, theme, ids) {
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

// luisa_nb/widgets/static/src/timeline/bars.js
var LABEL_MIN_WIDTH = 30;
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
function drawLanes(ctx, g, scene) {
  const { summary, theme, textWidths } = scene;
  const counts = { laneRecords: [], rects: 0, records: 0, labels: 0, labelled: [] };
  const columnsWide = Math.ceil(g.plotWidth) + 1;
  const columnsOf = {
    column: new Int16Array(columnsWide),
    ghost: new Int16Array(columnsWide),
    failed: new Int16Array(columnsWide)
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

// luisa_nb/widgets/static/src/timeline/controls.js
var KEY_ZOOM = 0.75;
var KEY_PAN = 0.2;
function attachControls(timeline) {
  const { canvas, frame, pointer } = timeline;
  function localPoint(event) {
    const box = canvas.getBoundingClientRect();
    return [event.clientX - box.left, event.clientY - box.top];
  }
  function onWheel(event) {
    const plotWidth = plotWidthOf(timeline.width);
    const unit = event.deltaMode === 1 ? 16 : event.deltaMode === 2 ? plotWidth : 1;
    const dx = event.deltaX * unit;
    const dy = event.deltaY * unit;
    if (event.ctrlKey || event.metaKey) {
      event.preventDefault();
      const [x] = localPoint(event);
      timeline.zoom(Math.exp(Math.max(Math.min(dy, 200), -200) * 2e-3), Math.max(x, LABEL_WIDTH));
    } else if (event.shiftKey || Math.abs(dx) > Math.abs(dy)) {
      const delta = Math.abs(dx) > Math.abs(dy) ? dx : dy;
      if (!delta) return;
      event.preventDefault();
      timeline.pan(Math.max(Math.min(delta, 400), -400) / plotWidth);
    }
  }
  function onKey(event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const key = event.key.toLowerCase();
    const at = pointer.x;
    if (key === "w") timeline.zoom(KEY_ZOOM, at);
    else if (key === "s") timeline.zoom(1 / KEY_ZOOM, at);
    else if (key === "a") timeline.pan(-KEY_PAN);
    else if (key === "d") timeline.pan(KEY_PAN);
    else if (key === "f" || key === "0") timeline.fit();
    else if (key === "arrowright" || key === "arrowleft") timeline.step(key === "arrowright" ? 1 : -1);
    else if (key === "escape" && pointer.measure) {
      pointer.measure = null;
      timeline.drawCursor();
    } else return;
    event.preventDefault();
    event.stopPropagation();
  }
  function onDown(event) {
    if (event.button !== 0) return;
    event.preventDefault();
    frame.focus({ preventScroll: true });
    const [x] = localPoint(event);
    const measure = (event.shiftKey || pointer.ruler) && x >= LABEL_WIDTH;
    pointer.drag = { x, view: { ...timeline.view }, moved: false, measure };
  }
  function onMove(event) {
    const [x, y] = localPoint(event);
    pointer.x = x >= LABEL_WIDTH ? x : null;
    const drag = pointer.drag;
    if (drag && !(event.buttons & 1)) pointer.drag = null;
    if (pointer.drag) {
      const dx = x - drag.x;
      if (Math.abs(dx) > 2) drag.moved = true;
      if (drag.moved) {
        timeline.tooltip.hidden = true;
        const g = timeline.geometry();
        if (drag.measure) {
          const edge = Math.min(Math.max(x, LABEL_WIDTH), timeline.width);
          pointer.measure = { t0: g.timeOf(drag.x), t1: g.timeOf(edge) };
          timeline.drawCursor();
        } else {
          const shift = dx / g.plotWidth * (drag.view.t1 - drag.view.t0);
          timeline.setView(drag.view.t0 - shift, drag.view.t1 - shift);
        }
        return;
      }
    }
    timeline.showTooltip(timeline.hit(x, y), x, y);
    timeline.drawCursor();
  }
  function onUp(event) {
    const wasDrag = pointer.drag && pointer.drag.moved;
    pointer.drag = null;
    if (wasDrag) return;
    if (pointer.measure) {
      pointer.measure = null;
      timeline.drawCursor();
    }
    const [x, y] = localPoint(event);
    timeline.select(timeline.hit(x, y));
  }
  function onLeave() {
    timeline.tooltip.hidden = true;
    pointer.drag = null;
    pointer.x = null;
    timeline.drawCursor();
  }
  canvas.addEventListener("wheel", onWheel, { passive: false });
  canvas.addEventListener("mousedown", onDown);
  canvas.addEventListener("mousemove", onMove);
  canvas.addEventListener("mouseup", onUp);
  canvas.addEventListener("mouseleave", onLeave);
  canvas.addEventListener("dblclick", () => timeline.fit());
  frame.addEventListener("keydown", onKey);
}

// luisa_nb/widgets/static/src/timeline/hit.js
var HIT_PIXELS = 4;
function nearCurve(p, x, y) {
  for (let k = 0; k <= 24; k++) {
    const t = k / 24;
    const px = (1 - t) * (1 - t) * p.x1 + 2 * (1 - t) * t * p.cx + t * t * p.x2;
    const py = (1 - t) * (1 - t) * p.y1 + 2 * (1 - t) * t * p.cy + t * t * p.y2;
    if (Math.hypot(px - x, py - y) <= 6) return true;
  }
  return false;
}
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
    const better = !best || gap < best.gap || gap === best.gap && (box.w < best.w || box.w === best.w && offset < best.offset);
    if (better) best = { row, gap, w: box.w, offset };
  }
  return best ? best.row : null;
}
function markerAt(g, records, x, y) {
  if (Math.abs(y - g.markerY()) > 7) return null;
  const tolerance = HIT_PIXELS / g.plotWidth * (g.view.t1 - g.view.t0);
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
function hitAt(g, records, paths, x, y) {
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
function arrowPoint(paths, index) {
  const found = paths.find((h) => h.index === index);
  if (!found) return null;
  const p = found.path;
  return { x: 0.25 * p.x1 + 0.5 * p.cx + 0.25 * p.x2, y: 0.25 * p.y1 + 0.5 * p.cy + 0.25 * p.y2 };
}

// luisa_nb/widgets/static/src/timeline/overlays.js
var OVERLAY_FONT = "8px sans-serif";
var HOST_RANGE_ROW = 8;
var HOST_RANGE_DEPTHS = 3;
var RANGE_KEYS = ["range1", "range2", "range3", "range4"];
function drawOverlays(ctx, summary, g) {
  const theme = g.theme;
  const left = g.LABEL_WIDTH;
  const right = left + g.plotWidth;
  const lanes = (summary.lanes || []).length;
  const counted = { ranges: 0, lists: 0, untimed: 0, links: 0, activity: 0 };
  const laneBottom = (lane) => g.laneTop(lane) + g.laneHeight(lane);
  const span = (t0, t1, least) => {
    const x0 = g.xOf(t0);
    const x1 = Math.max(g.xOf(t1), x0 + least);
    return x1 < left || x0 > right ? null : [x0, x1];
  };
  const label = (text, x0, x1, y, color) => {
    const room = Math.min(x1, right) - Math.max(x0, left) - 4;
    if (room < 14 || ctx.measureText(text).width > room) return;
    ctx.fillStyle = color;
    ctx.fillText(text, Math.max(x0, left) + 2, y);
  };
  ctx.save();
  ctx.beginPath();
  ctx.rect(left, 0, right - left, g.laneTop(lanes - 1) + 200);
  ctx.clip();
  ctx.font = OVERLAY_FONT;
  ctx.textBaseline = "top";
  const [hostBarY, hostBarH] = g.barBox(0);
  for (const block of summary.host_activity || []) {
    const box = span(block.start, block.end, 1);
    if (!box) continue;
    const compile = block.kind === "compile";
    ctx.fillStyle = compile ? theme.compile : theme.border;
    ctx.fillRect(box[0], hostBarY, box[1] - box[0], hostBarH);
    label(block.label, box[0], box[1], hostBarY, compile ? inkOn(theme.compile, theme) : theme.fgMuted);
    counted.activity++;
  }
  for (const block of summary.untimed || []) {
    const box = span(block.start, block.end, 2);
    if (!box || block.lane >= lanes) continue;
    const [y, h] = g.barBox(block.lane);
    ctx.fillStyle = theme.border;
    ctx.fillRect(box[0], y, box[1] - box[0], h);
    ctx.strokeStyle = theme.fgMuted;
    ctx.lineWidth = 1;
    ctx.strokeRect(box[0] + 0.5, y + 0.5, Math.max(box[1] - box[0] - 1, 1), h - 1);
    const times = summary.lanes[block.lane].times || "";
    const commands = block.commands === 1 ? "1 command" : `${block.commands} commands`;
    label(`${commands}: ${times}`, box[0], box[1], y + 2, theme.fg);
    counted.untimed++;
  }
  const hostTop = g.laneTop(0);
  for (const range of summary.ranges || []) {
    const color = theme[RANGE_KEYS[range.depth % RANGE_KEYS.length]];
    let drawn = false;
    const host = span(range.host[0], range.host[1], 2);
    if (host && range.depth < HOST_RANGE_DEPTHS) {
      const y = hostTop + 1 + range.depth * HOST_RANGE_ROW;
      ctx.globalAlpha = 0.22;
      ctx.fillStyle = color;
      ctx.fillRect(host[0], y, host[1] - host[0], HOST_RANGE_ROW - 1);
      ctx.globalAlpha = 1;
      ctx.fillRect(host[0], y, host[1] - host[0], 1);
      ctx.fillRect(host[0], y, 1, HOST_RANGE_ROW - 1);
      ctx.fillRect(host[1] - 1, y, 1, HOST_RANGE_ROW - 1);
      label(range.name, host[0], host[1], y, theme.fg);
      drawn = true;
    }
    for (const [lane, t0, t1] of range.spans) {
      const box = span(t0, t1, 2);
      if (!box || lane >= lanes) continue;
      const y = g.laneTop(lane) + Math.min(range.depth, 1) * 2;
      ctx.fillStyle = color;
      ctx.fillRect(box[0], y, box[1] - box[0], 2);
      ctx.fillRect(box[0], y, 1, 6);
      ctx.fillRect(box[1] - 1, y, 1, 6);
      drawn = true;
    }
    if (drawn) counted.ranges++;
  }
  ctx.fillStyle = theme.fgMuted;
  for (const list of summary.lists || []) {
    const box = span(list.start, list.end, 2);
    if (!box || list.lane >= lanes) continue;
    const y = laneBottom(list.lane) - 3;
    ctx.fillRect(box[0], y, box[1] - box[0], 1);
    ctx.fillRect(box[0], y - 3, 1, 4);
    ctx.fillRect(box[1] - 1, y - 3, 1, 4);
    counted.lists++;
  }
  ctx.strokeStyle = theme.link;
  ctx.fillStyle = ctx.strokeStyle;
  ctx.lineWidth = 1.5;
  for (const link of summary.links || []) {
    const x1 = g.xOf(link.from.time);
    const x2 = g.xOf(link.to.time);
    if (Math.max(x1, x2) < left || Math.min(x1, x2) > right) continue;
    const [y1, h1] = g.barBox(link.from.lane);
    const [y2, h2] = g.barBox(link.to.lane);
    const from = [x1, y1 + h1 / 2];
    const to = [x2, y2 + h2 / 2];
    ctx.beginPath();
    ctx.moveTo(from[0], from[1]);
    ctx.lineTo(to[0], to[1]);
    ctx.stroke();
    const angle = Math.atan2(to[1] - from[1], to[0] - from[0]);
    ctx.beginPath();
    ctx.moveTo(to[0], to[1]);
    ctx.lineTo(to[0] - 7 * Math.cos(angle - 0.45), to[1] - 7 * Math.sin(angle - 0.45));
    ctx.lineTo(to[0] - 7 * Math.cos(angle + 0.45), to[1] - 7 * Math.sin(angle + 0.45));
    ctx.closePath();
    ctx.fill();
    counted.links++;
  }
  ctx.restore();
  return counted;
}

// luisa_nb/widgets/static/src/timeline/toolbar.js
var SVG = "http://www.w3.org/2000/svg";
var HINT = "keys W/S zoom · A/D pan · F fit · Ctrl+wheel zoom · Shift+drag measure";
var KEYS2 = "Ctrl/⌘ + wheel: zoom about the pointer\nShift + wheel: pan\nWith the timeline focused (click it or Tab to it):\n  W / S: zoom in / out\n  A / D: pan left / right\n  F or 0: fit the whole trace\n  Esc: clear the measurement\nShift + drag: measure a span\nDrag: pan · double-click: fit";
function button(toolbar, label, title, action) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = label;
  b.title = title;
  b.addEventListener("click", action);
  toolbar.append(b);
  return b;
}
function legendItem(box, mark, icon, name) {
  const item = element("span", "", name);
  item.dataset.mark = mark;
  item.prepend(icon);
  box.append(item);
}
function swatch(tag, className, style, symbol) {
  const node = element(tag, className, symbol);
  if (style) node.style.cssText = style;
  return node;
}
function arrowSwatch() {
  const svg = document.createElementNS(SVG, "svg");
  const attributes = { class: "lnb-legend-arrow", viewBox: "0 0 22 10", width: "22", height: "10", "aria-hidden": "true" };
  for (const [name, value] of Object.entries(attributes)) svg.setAttribute(name, value);
  const curve = { d: "M2 8 Q 10 0 17 6", fill: "none", stroke: "currentColor", "stroke-width": "2" };
  for (const shape of [curve, { d: "M21 9 L13 7 L17 3 Z", fill: "currentColor" }]) {
    const path = document.createElementNS(SVG, "path");
    for (const [name, value] of Object.entries(shape)) path.setAttribute(name, value);
    svg.append(path);
  }
  return svg;
}
function legend({ summary, records, hazards }) {
  const { columns, count, statusMark } = records;
  const kinds = /* @__PURE__ */ new Set();
  const statuses = /* @__PURE__ */ new Set();
  let reads = false;
  let writes = false;
  for (let i = 0; i < count; i++) {
    kinds.add(columns.kind[i]);
    statuses.add(columns.status[i]);
    if (!Number.isNaN(columns.host[i])) {
      if (columns.kind[i] === 1) writes = true;
      else reads = true;
    }
  }
  const box = document.createElement("span");
  box.className = "lnb-legend";
  summary.kinds.forEach((kind, code) => {
    if (kinds.has(code)) legendItem(box, `kind:${kind.name}`, swatch("i", "", `background:${kind.color}`), kind.name);
  });
  const colorOf = (name) => (summary.kinds.find((k) => k.name === name) || { color: "" }).color;
  if (reads) legendItem(box, "host-read", swatch("b", "", `color:${colorOf("upload")}`, "▼"), "host read");
  if (writes) legendItem(box, "host-write", swatch("b", "", `color:${colorOf("download")}`, "▲"), "host write");
  const named = (mark) => [...statuses].filter((code) => statusMark[code] === mark).map((code) => summary.statuses[code]);
  const failed = named(FAILED);
  if (failed.length) legendItem(box, "failed", swatch("i", "lnb-legend-failed"), failed.join(" / "));
  const notRun = named(NOT_RUN);
  if (notRun.length) legendItem(box, "not-run", swatch("i", "lnb-legend-not-run"), `${notRun.join(" / ")} (did not run)`);
  const arrows = hazards.filter((h) => h.arrow);
  if (arrows.some((h) => h.kind !== LATENT)) legendItem(box, "hazard", arrowSwatch(), "hazard");
  if (arrows.some((h) => h.kind === LATENT)) legendItem(box, "latent", arrowSwatch(), "latent hazard");
  return box;
}
function buildToolbar(toolbar, scene, actions) {
  toolbar.replaceChildren();
  button(toolbar, "Fit", "show the whole trace (F or 0, or double-click the timeline)", () => actions.fit());
  button(toolbar, "+", "zoom in (W, or Ctrl/⌘ + wheel)", () => actions.zoom(0.5));
  button(toolbar, "−", "zoom out (S, or Ctrl/⌘ + wheel)", () => actions.zoom(2));
  const ruler = button(toolbar, "Ruler", "measure: drag across the timeline (or Shift + drag); Esc clears", () => {
    ruler.setAttribute("aria-pressed", String(actions.toggleRuler()));
  });
  ruler.setAttribute("aria-pressed", "false");
  toolbar.append(legend(scene));
  const hint = element("span", "lnb-hint", HINT);
  hint.title = KEYS2;
  toolbar.append(hint);
}

// luisa_nb/widgets/static/src/timeline/tooltip.js
function recordLines(summary, records, row, marker) {
  const { columns } = records;
  const kind = summary.kinds[columns.kind[row]].name;
  const lane = summary.lanes[columns.lane[row]];
  const start = columns.start[row];
  const duration = columns.duration[row];
  const lines = [[element("b", "", `#${columns.id[row]} ${summary.texts[columns.text[row]]}`)]];
  const where = lane.stream === null ? "host" : `stream ${lane.name}`;
  lines.push([`${kind} · ${where} · ${summary.statuses[columns.status[row]]}`]);
  if (records.statusMark[columns.status[row]] === NOT_RUN) {
    lines.push([`did not run; drawn where it stands in its stream, at ${formatTime(start)}`]);
  } else {
    lines.push([`start ${formatTime(start)} · took ${formatTime(duration)}`]);
  }
  if (!Number.isNaN(columns.host[row])) {
    const what = kind === "upload" ? "host read" : "host write";
    const offset = columns.host[row];
    const relation = offset < 0 ? `${formatTime(-offset)} before it started` : `${formatTime(offset)} after it started`;
    const moment = `${what} at ${formatTime(start + offset)}`;
    lines.push([marker ? element("b", "", moment) : moment, ` (${relation})`]);
  }
  if (records.hazardIds.has(columns.id[row])) lines.push([element("span", "lnb-bad", "part of a hazard")]);
  return lines;
}
function hazardLines(hazard) {
  return [[element("b", "lnb-bad", hazard.kind)], [hazard.message], [element("i", "", `fix: ${hazard.fix}`)]];
}
function showTooltip(tooltip, scene, hit, x, y, width) {
  if (!hit) {
    tooltip.hidden = true;
    return;
  }
  const lines = hit.hazard !== void 0 ? hazardLines(scene.hazards[hit.hazard]) : recordLines(scene.summary, scene.records, hit.row, hit.marker);
  tooltip.replaceChildren(...lines.flatMap((parts, i) => i ? [element("br"), ...parts] : parts));
  tooltip.hidden = false;
  const left = Math.min(x + 14, Math.max(width - 380, 0));
  tooltip.style.left = `${left}px`;
  tooltip.style.top = `${y + 16}px`;
}

// luisa_nb/widgets/static/src/timeline/view.js
function extent(summary) {
  return summary.meta && summary.meta.extent || [0, 1];
}
function fullView(summary) {
  const [t0, t1] = extent(summary);
  const span = Math.max(t1 - t0, 1e-3);
  return { t0: t0 - span * 0.02, t1: t1 + span * 0.02 };
}
function clampView(summary, t0, t1) {
  const [e0, e1] = extent(summary);
  const limit = Math.max(e1 - e0, 1e-3) * 4;
  const span = Math.min(Math.max(t1 - t0, 1e-4), limit);
  const centre = Math.min(Math.max((t0 + t1) / 2, e0), e1);
  return { t0: centre - span / 2, t1: centre + span / 2 };
}
function viewAround(summary, [lo, hi], margin) {
  const pad = Math.max(hi - lo, 1e-3) * margin;
  return clampView(summary, lo - pad, hi + pad);
}
function hazardSpan(records, hazard) {
  const times = [];
  if (hazard.arrow) times.push(hazard.arrow.from.time, hazard.arrow.to.time);
  const { start, duration } = records.columns;
  for (const row of rowsOf(records, hazard.command_ids)) {
    times.push(start[row], start[row] + duration[row]);
  }
  return times.length ? [Math.min(...times), Math.max(...times)] : null;
}
function initialView(summary, hazards, records) {
  for (const hazard of hazards) {
    const span = hazardSpan(records, hazard);
    if (span) return viewAround(summary, span, 0.15);
  }
  return fullView(summary);
}
function comfortable(view, lo, hi, share) {
  const span = view.t1 - view.t0;
  const margin = span * 0.03;
  return lo >= view.t0 + margin && hi <= view.t1 - margin && hi - lo >= share * span;
}
function zoomedView(summary, view, factor, anchor) {
  const t0 = anchor - (anchor - view.t0) * factor;
  const t1 = anchor + (view.t1 - anchor) * factor;
  return clampView(summary, t0, t1);
}
function pannedView(summary, view, fraction) {
  const shift = fraction * (view.t1 - view.t0);
  return clampView(summary, view.t0 + shift, view.t1 + shift);
}
function hazardView(summary, records, view, hazard) {
  const span = hazard ? hazardSpan(records, hazard) : null;
  if (!span || comfortable(view, span[0], span[1], 0.25)) return null;
  return viewAround(summary, span, 0.15);
}
function commandView(summary, records, view, plotWidth, id) {
  const [row] = rowsOf(records, [id]);
  if (row === void 0) return null;
  const { columns } = records;
  const start = columns.start[row];
  const end = start + columns.duration[row];
  const host = start + columns.host[row];
  let [lo, hi] = [start, end];
  if (!Number.isNaN(host) && Math.max(end, host) - Math.min(start, host) <= 20 * (end - start)) {
    [lo, hi] = [Math.min(start, host), Math.max(end, host)];
  }
  const span = view.t1 - view.t0;
  const wide = end === start || (end - start) / span * plotWidth >= 4;
  if (wide && comfortable(view, lo, hi, 0)) return null;
  if (wide && hi - lo <= 0.8 * span) {
    return clampView(summary, (lo + hi) / 2 - span / 2, (lo + hi) / 2 + span / 2);
  }
  return viewAround(summary, [lo, hi], 1);
}

// luisa_nb/widgets/static/src/timeline/timeline.js
var COMMAND_KINDS = /* @__PURE__ */ new Set(["upload", "download", "copy", "fill", "dispatch"]);
function registry() {
  const root = globalThis.__luisa_nb = globalThis.__luisa_nb || {};
  root.timelines = root.timelines || [];
  return root;
}
var Timeline = class {
  constructor(model, el) {
    this.model = model;
    this.el = el;
    this.root = element("div", "lnb-timeline");
    this.toolbar = element("div", "lnb-toolbar");
    this.frame = element("div", "lnb-timeline-frame");
    this.frame.tabIndex = 0;
    this.frame.setAttribute("role", "figure");
    this.frame.setAttribute("aria-label", "timeline: W/S zoom, A/D pan, F fit, arrows step commands");
    this.canvas = element("canvas", "lnb-timeline-canvas");
    this.cursorLayer = element("canvas", "lnb-timeline-cursor");
    this.cursorLayer.style.cssText = "position:absolute;left:0;top:0;pointer-events:none";
    this.tooltip = element("div", "lnb-tooltip");
    this.tooltip.hidden = true;
    this.frame.append(this.canvas, this.cursorLayer, this.tooltip);
    this.root.append(this.toolbar, this.frame);
    el.replaceChildren(this.root);
    this.width = 0;
    this.theme = {};
    this.patterns = /* @__PURE__ */ new Map();
    this.textWidths = /* @__PURE__ */ new Map();
    this.hazardPaths = [];
    this.pointer = { x: null, measure: null, drag: null, ruler: false };
    this.ownSelection = false;
    this.stats = { draws: 0, firstDrawMs: null, lastDrawMs: null, loadedAt: performance.now(), measure: null, cursor: null };
    this.load();
  }
  // Read the model's data and open on it.
  load() {
    this.summary = this.model.get("summary") || {};
    this.hazards = modelHazards(this.model);
    this.findings = this.model.get("findings") || [];
    this.records = decodeRecords(this.summary, this.model.get("data"), this.hazards);
    this.textWidths.clear();
    this.pointer.measure = null;
    this.view = initialView(this.summary, this.hazards, this.records);
    const scene = { summary: this.summary, records: this.records, hazards: this.hazards };
    buildToolbar(this.toolbar, scene, {
      fit: () => this.fit(),
      zoom: (factor) => this.zoom(factor),
      toggleRuler: () => this.pointer.ruler = !this.pointer.ruler
    });
  }
  geometry() {
    return geometry(this.view, this.width, this.summary.lanes, this.theme);
  }
  resize() {
    const measured = this.frame.clientWidth || this.el.clientWidth || 900;
    this.width = Math.max(measured, LABEL_WIDTH + 100);
    const height = lanesHeight(this.summary.lanes.length);
    const ratio = window.devicePixelRatio || 1;
    for (const canvas of [this.canvas, this.cursorLayer]) {
      canvas.width = Math.round(this.width * ratio);
      canvas.height = Math.round(height * ratio);
      canvas.style.width = `${this.width}px`;
      canvas.style.height = `${height}px`;
    }
  }
  // Re-read the theme colours; true when they changed since the last read.
  refreshTheme() {
    const next = readTheme(this.root);
    const changed = JSON.stringify(next) !== JSON.stringify(this.theme);
    this.theme = next;
    return changed;
  }
  draw() {
    const began = performance.now();
    if (!this.width) this.resize();
    const ctx = this.canvas.getContext("2d");
    const ratio = this.canvas.width / this.width;
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    this.refreshTheme();
    const g = this.geometry();
    const { theme, summary, records, stats } = this;
    ctx.fillStyle = theme.bg;
    ctx.fillRect(0, 0, g.width, g.height);
    const colors = summary.kinds.map((k) => k.color);
    const inks = colors.map((color) => inkOn(color, theme));
    const scene = { summary, records, theme, colors, inks, patterns: this.patterns, textWidths: this.textWidths };
    const counts = drawLanes(ctx, g, scene);
    stats.overlays = drawOverlays(ctx, summary, g);
    const selected = this.model.get("selected_hazard");
    const hazards = drawHazards(ctx, g, this.hazards, theme, selected, this.findings, records);
    const { drawn: arrows, paths } = hazards;
    this.hazardPaths = paths;
    const markers = drawMarkers(ctx, g, records, colors);
    drawSelection(ctx, g, records, theme, this.model.get("selected_commands") || []);
    stats.axis = drawAxis(ctx, g, theme, records.count);
    this.drawCursor();
    const elapsed = performance.now() - began;
    stats.draws += 1;
    stats.lastDrawMs = elapsed;
    if (stats.firstDrawMs === null) {
      stats.firstDrawMs = elapsed;
      stats.firstDrawnAt = performance.now();
    }
    Object.assign(stats, counts, { markers, arrows, view: { ...this.view } });
    Object.assign(this.root.dataset, {
      draws: String(stats.draws),
      drawMs: elapsed.toFixed(3),
      firstDrawMs: stats.firstDrawMs.toFixed(3),
      records: String(counts.records),
      rects: String(counts.rects),
      laneRecords: JSON.stringify(counts.laneRecords),
      markers: String(markers),
      arrows: String(arrows),
      hazardLabels: String(hazards.labelled),
      outlinedBars: String(hazards.outlined),
      labels: String(counts.labels)
    });
  }
  drawCursor() {
    const ctx = this.cursorLayer.getContext("2d");
    const ratio = this.cursorLayer.width / this.width;
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    Object.assign(this.stats, drawCursor(ctx, this.geometry(), this.theme, this.pointer));
  }
  setView(t0, t1) {
    this.view = clampView(this.summary, t0, t1);
    this.draw();
  }
  fit() {
    this.view = fullView(this.summary);
    this.draw();
  }
  // Zoom by `factor` (< 1: in) about x (CSS pixels; the plot's middle by default).
  zoom(factor, x) {
    const g = this.geometry();
    const anchor = g.timeOf(x === void 0 || x === null ? LABEL_WIDTH + g.plotWidth / 2 : x);
    this.view = zoomedView(this.summary, this.view, factor, anchor);
    this.draw();
  }
  // Pan by `fraction` of the view's span (> 0: later).
  pan(fraction) {
    this.view = pannedView(this.summary, this.view, fraction);
    this.draw();
  }
  // Bring hazard `index` into view, unless it already is, comfortably.
  showHazard(index) {
    const next = hazardView(this.summary, this.records, this.view, this.hazards[index]);
    if (next) this.setView(next.t0, next.t1);
  }
  // Bring command `id` into view, unless it already is, comfortably.
  showCommand(id) {
    const next = commandView(this.summary, this.records, this.view, this.geometry().plotWidth, id);
    if (next) this.setView(next.t0, next.t1);
  }
  hit(x, y) {
    return hitAt(this.geometry(), this.records, this.hazardPaths, x, y);
  }
  showTooltip(hit, x, y) {
    showTooltip(this.tooltip, this, hit, x, y, this.width);
  }
  // Select what a click hit (an arrow: its hazard; a bar or marker: its command; nothing:
  // no command).
  select(hit) {
    const { model } = this;
    if (hit && hit.hazard !== void 0) model.set("selected_hazard", hit.hazard);
    else if (hit) model.set("selected_command", this.records.columns.id[hit.row]);
    else model.set("selected_command", null);
    this.ownSelection = true;
    try {
      model.save_changes();
    } finally {
      this.ownSelection = false;
    }
  }
  // Select the command `direction` (+1, -1) steps after the selected record in issue
  // order (ArrowRight, ArrowLeft); sync points are stepped over.
  step(direction) {
    const { id, kind } = this.records.columns;
    const kinds = this.summary.kinds || [];
    const ids = Array.from(id).filter((_, row) => COMMAND_KINDS.has((kinds[kind[row]] || {}).name)).sort((a, b) => a - b);
    const current = this.model.get("selected_command");
    const next = direction > 0 ? ids.find((k) => current == null || k > current) : ids.findLast((k) => current == null || k < current);
    if (next === void 0) return;
    this.model.set("selected_command", next);
    this.model.save_changes();
  }
  // What tests and tools reach through globalThis.__luisa_nb.timelines.
  hooks() {
    return {
      root: this.root,
      stats: this.stats,
      barRect: (id) => {
        const rows = rowsOf(this.records, [id]);
        return rows.length ? rectOfRow(this.geometry(), this.records, rows[0]) : null;
      },
      arrowPoint: (index) => arrowPoint(this.hazardPaths, index),
      arrowPath: (index) => {
        const found = this.hazardPaths.find((h) => h.index === index);
        return found ? { ...found.path } : null;
      },
      view: () => ({ ...this.view }),
      setView: (t0, t1) => this.setView(t0, t1),
      fit: () => this.fit(),
      extent: () => [...extent(this.summary)],
      geometry: () => this.geometry(),
      hit: (x, y) => this.hit(x, y)
    };
  }
};
function watchTheme(timeline) {
  let timer = null;
  const check = () => {
    if (timeline.refreshTheme()) timeline.draw();
  };
  const watch = new MutationObserver(() => {
    check();
    clearTimeout(timer);
    timer = setTimeout(check, 300);
  });
  const attributeFilter = ["class", "style", "data-jp-theme-name", "data-jp-theme-light"];
  for (const node of [document.documentElement, document.body]) {
    watch.observe(node, { attributes: true, attributeFilter });
  }
  if (document.head) watch.observe(document.head, { childList: true });
  return () => {
    watch.disconnect();
    clearTimeout(timer);
  };
}
function watchSize(timeline) {
  if (typeof ResizeObserver === "undefined") return () => {
  };
  const observer = new ResizeObserver(() => {
    const measured = timeline.frame.clientWidth;
    if (measured && Math.abs(measured - timeline.width) > 1) {
      timeline.resize();
      timeline.draw();
    }
  });
  observer.observe(timeline.frame);
  return () => observer.disconnect();
}
function render({ model, el }) {
  const timeline = new Timeline(model, el);
  const entry = timeline.hooks();
  registry().timelines.push(entry);
  attachControls(timeline);
  const onSelection = () => timeline.draw();
  const onHazard = () => {
    const index = model.get("selected_hazard");
    if (index !== null && index !== void 0 && !timeline.ownSelection) timeline.showHazard(index);
    timeline.draw();
  };
  const onCommand = () => {
    const id = model.get("selected_command");
    const index = model.get("selected_hazard");
    const hazard = index === null || index === void 0 ? null : timeline.hazards[index];
    if (id === null || id === void 0 || timeline.ownSelection) return;
    if (hazard && hazard.command_ids.includes(id)) return;
    timeline.showCommand(id);
  };
  const onData = () => {
    timeline.load();
    timeline.resize();
    timeline.draw();
  };
  const handlers = {
    "change:selected_commands": onSelection,
    "change:selected_command": onCommand,
    "change:selected_hazard": onHazard,
    "change:data": onData,
    "change:summary": onData,
    "change:hazards": onData,
    "change:findings": onData
  };
  for (const [name, handler] of Object.entries(handlers)) model.on(name, handler);
  const stopSize = watchSize(timeline);
  const stopTheme = watchTheme(timeline);
  timeline.resize();
  timeline.draw();
  return () => {
    stopSize();
    stopTheme();
    for (const [name, handler] of Object.entries(handlers)) model.off(name, handler);
    const list = registry().timelines;
    const at = list.indexOf(entry);
    if (at >= 0) list.splice(at, 1);
  };
}
var timeline_default = widget(render);
export {
  timeline_default as default
};
