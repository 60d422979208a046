// Timeline of a luisa_nb trace: a host lane and one lane per stream, each record a bar
// coloured by kind, host reads/writes as markers on the host lane, hazards as red arrows.
// anywidget renderer: export render({model, el}); the static page calls it with a shim.
//
// Model keys read: summary (JSON: layout, lanes, kinds, texts, meta), hazards (JSON),
// data (the packed columns, bytes), selected_command, selected_hazard, selected_commands.
// Keys written (on click): selected_command, selected_hazard.
//
// Zoomed out, bars narrower than MIN_BAR device pixels are aggregated into one run per
// pixel column per lane, so a draw costs O(records in view) + O(width x lanes) rects.

const LANE_HEIGHT = 26;
const HOST_LANE_HEIGHT = 46;
const AXIS_HEIGHT = 22;
const LABEL_WIDTH = 120;
const MIN_BAR = 3;
const HIT_PIXELS = 4;
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
  return { count, columns, byLane, maxDuration, hazardIds, hostOrder: null };
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

function escapeHtml(text) {
  return String(text).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}

function registry() {
  const root = (globalThis.__luisa_nb = globalThis.__luisa_nb || {});
  root.timelines = root.timelines || [];
  return root;
}

export function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "lnb-timeline";
  const toolbar = document.createElement("div");
  toolbar.className = "lnb-toolbar";
  const frame = document.createElement("div");
  frame.className = "lnb-timeline-frame";
  const canvas = document.createElement("canvas");
  canvas.className = "lnb-timeline-canvas";
  const tooltip = document.createElement("div");
  tooltip.className = "lnb-tooltip";
  tooltip.hidden = true;
  frame.append(canvas, tooltip);
  root.append(toolbar, frame);
  el.replaceChildren(root);

  let summary = model.get("summary") || {};
  let hazards = model.get("hazards") || [];
  let data = decode(summary, model.get("data"), hazards);
  let view = fullView();
  let width = 0;
  let hazardPaths = [];
  const stats = { draws: 0, firstDrawMs: null, lastDrawMs: null, loadedAt: performance.now() };
  const entry = { root, stats, barRect, arrowPoint, view: () => ({ ...view }), setView, hit: hitAt };
  registry().timelines.push(entry);

  function fullView() {
    const [t0, t1] = (summary.meta && summary.meta.extent) || [0, 1];
    const span = Math.max(t1 - t0, 1e-3);
    return { t0: t0 - span * 0.02, t1: t1 + span * 0.02 };
  }

  function lanesHeight() {
    return AXIS_HEIGHT + HOST_LANE_HEIGHT + (summary.lanes.length - 1) * LANE_HEIGHT + 4;
  }

  function laneTop(lane) {
    return lane === 0 ? AXIS_HEIGHT : AXIS_HEIGHT + HOST_LANE_HEIGHT + (lane - 1) * LANE_HEIGHT;
  }

  function laneAt(y) {
    if (y < AXIS_HEIGHT) return -1;
    if (y < AXIS_HEIGHT + HOST_LANE_HEIGHT) return 0;
    const lane = 1 + Math.floor((y - AXIS_HEIGHT - HOST_LANE_HEIGHT) / LANE_HEIGHT);
    return lane < summary.lanes.length ? lane : -1;
  }

  // Bars of stream lanes fill the lane; on the host lane, bars (host waits) sit at the
  // bottom, markers above them, and hazard arcs in the top half.
  function barBox(lane) {
    const top = laneTop(lane);
    if (lane === 0) return [top + HOST_LANE_HEIGHT - 12, 9];
    return [top + 4, LANE_HEIGHT - 8];
  }

  function markerY() {
    return AXIS_HEIGHT + HOST_LANE_HEIGHT - 20;
  }

  function plotWidth() {
    return Math.max(width - LABEL_WIDTH, 10);
  }

  function xOf(t) {
    return LABEL_WIDTH + ((t - view.t0) / (view.t1 - view.t0)) * plotWidth();
  }

  function timeOf(x) {
    return view.t0 + ((x - LABEL_WIDTH) / plotWidth()) * (view.t1 - view.t0);
  }

  function resize() {
    const measured = frame.clientWidth || el.clientWidth || 900;
    width = Math.max(measured, LABEL_WIDTH + 100);
    const height = lanesHeight();
    const ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    canvas.style.width = `${width}px`;
    canvas.style.height = `${height}px`;
  }

  function draw() {
    const began = performance.now();
    if (!width) resize();
    const ctx = canvas.getContext("2d");
    const ratio = canvas.width / width;
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    const height = lanesHeight();
    ctx.clearRect(0, 0, width, height);
    const colors = summary.kinds.map((k) => k.color);
    const counts = drawLanes(ctx, colors, height);
    const arrows = drawHazards(ctx);
    const markers = drawMarkers(ctx, colors);
    drawSelection(ctx);
    drawAxis(ctx);
    const elapsed = performance.now() - began;
    stats.draws += 1;
    stats.lastDrawMs = elapsed;
    if (stats.firstDrawMs === null) {
      stats.firstDrawMs = elapsed;
      stats.firstDrawnAt = performance.now();
    }
    Object.assign(stats, counts, { markers, arrows, view: { ...view } });
    root.dataset.draws = String(stats.draws);
    root.dataset.drawMs = elapsed.toFixed(3);
    root.dataset.firstDrawMs = stats.firstDrawMs.toFixed(3);
    root.dataset.records = String(counts.records);
    root.dataset.rects = String(counts.rects);
    root.dataset.laneRecords = JSON.stringify(counts.laneRecords);
    root.dataset.markers = String(markers);
    root.dataset.arrows = String(arrows);
  }

  function drawLanes(ctx, colors, height) {
    const { columns, byLane, maxDuration } = data;
    const plot = plotWidth();
    const scale = plot / (view.t1 - view.t0);
    const laneRecords = [];
    let rects = 0;
    let records = 0;
    const column = new Int16Array(Math.ceil(plot) + 1);
    for (let lane = 0; lane < summary.lanes.length; lane++) {
      const top = laneTop(lane);
      const laneHeight = lane === 0 ? HOST_LANE_HEIGHT : LANE_HEIGHT;
      ctx.fillStyle = lane % 2 ? "rgba(0,0,0,0.035)" : "rgba(0,0,0,0.0)";
      ctx.fillRect(0, top, width, laneHeight);
      ctx.strokeStyle = "rgba(0,0,0,0.12)";
      ctx.beginPath();
      ctx.moveTo(0, top + laneHeight - 0.5);
      ctx.lineTo(width, top + laneHeight - 0.5);
      ctx.stroke();
    }
    drawGrid(ctx, height);
    drawLinks(ctx);
    for (let lane = 0; lane < summary.lanes.length; lane++) {
      const top = laneTop(lane);
      const laneHeight = lane === 0 ? HOST_LANE_HEIGHT : LANE_HEIGHT;
      const rows = byLane[lane];
      const [y, h] = barBox(lane);
      let drawn = 0;
      column.fill(-1);
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
        if (x1 - x0 >= MIN_BAR) {
          const left = Math.max(x0, -2);
          const right = Math.min(x1, plot + 2);
          ctx.fillStyle = colors[kind];
          ctx.fillRect(LABEL_WIDTH + left, y, Math.max(right - left - 1, 1), h);
          if (columns.status[row] >= 2) {
            ctx.fillStyle = "#d62728";
            ctx.fillRect(LABEL_WIDTH + left, y, Math.max(right - left - 1, 1), 2);
          }
          rects++;
        } else {
          const c0 = Math.max(0, Math.floor(x0));
          const c1 = Math.min(plot, Math.floor(x1));
          for (let c = c0; c <= c1; c++) {
            const held = column[c];
            if (held < 0 || PRIORITY[kind] > PRIORITY[held]) column[c] = kind;
          }
        }
      }
      // one rect per run of equal kind over adjacent pixel columns
      let c = 0;
      while (c <= plot) {
        const kind = column[c];
        if (kind < 0) {
          c++;
          continue;
        }
        let end = c + 1;
        while (end <= plot && column[end] === kind) end++;
        ctx.fillStyle = colors[kind];
        ctx.fillRect(LABEL_WIDTH + c, y, end - c, h);
        rects++;
        c = end;
      }
      laneRecords.push(drawn);
      records += drawn;
      ctx.fillStyle = "#fff";
      ctx.fillRect(0, top, LABEL_WIDTH - 2, laneHeight - 1);
      ctx.fillStyle = "#222";
      ctx.font = "12px sans-serif";
      ctx.textBaseline = "middle";
      const name = summary.lanes[lane].name;
      ctx.fillText(lane === 0 ? "host" : name.slice(0, 16), 6, top + laneHeight / 2);
    }
    ctx.strokeStyle = "rgba(0,0,0,0.25)";
    ctx.beginPath();
    ctx.moveTo(LABEL_WIDTH - 0.5, AXIS_HEIGHT);
    ctx.lineTo(LABEL_WIDTH - 0.5, height);
    ctx.stroke();
    return { laneRecords, rects, records };
  }

  function hostOrder() {
    if (data.hostOrder) return data.hostOrder;
    const { columns, count } = data;
    const rows = [];
    for (let i = 0; i < count; i++) if (!Number.isNaN(columns.host[i])) rows.push(i);
    const times = new Float64Array(rows.length);
    rows.sort((a, b) => columns.start[a] + columns.host[a] - (columns.start[b] + columns.host[b]));
    for (let k = 0; k < rows.length; k++) times[k] = columns.start[rows[k]] + columns.host[rows[k]];
    data.hostOrder = { rows: Int32Array.from(rows), times };
    return data.hostOrder;
  }

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

  // Host reads (▼, upload colour) and host writes (▲, download colour), one per pixel
  // column; a dashed line to the command's bar when few are in view.
  function drawMarkers(ctx, colors) {
    const { columns } = data;
    const order = hostOrder();
    const from = firstAtOrAfter(order.times, view.t0);
    const to = firstAtOrAfter(order.times, view.t1 + 1e-9);
    const plot = plotWidth();
    const seen = new Uint8Array(Math.ceil(plot) + 2);
    const y = markerY();
    for (let k = from; k < to; k++) {
      const row = order.rows[k];
      const x = xOf(order.times[k]);
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
  function drawLinks(ctx) {
    const { columns } = data;
    const order = hostOrder();
    const from = firstAtOrAfter(order.times, view.t0);
    const to = firstAtOrAfter(order.times, view.t1 + 1e-9);
    if (to - from > 200) return;
    ctx.save();
    ctx.strokeStyle = "rgba(0,0,0,0.28)";
    ctx.setLineDash([3, 3]);
    for (let k = from; k < to; k++) {
      const row = order.rows[k];
      const [barY, barH] = barBox(columns.lane[row]);
      ctx.beginPath();
      ctx.moveTo(xOf(order.times[k]), markerY() + 4);
      ctx.lineTo(xOf(columns.start[row]), barY + barH / 2);
      ctx.stroke();
    }
    ctx.restore();
  }

  function arrowPath(arrow) {
    const x1 = xOf(arrow.from.time);
    const x2 = xOf(arrow.to.time);
    const y1 = arrow.from.lane === 0 ? markerY() : barBox(arrow.from.lane)[0] + 4;
    const y2 = arrow.to.lane === 0 ? markerY() : barBox(arrow.to.lane)[0] + 4;
    const lift = arrow.from.lane === 0 && arrow.to.lane === 0 ? AXIS_HEIGHT + 4 : Math.min(y1, y2) - 14;
    return { x1, y1, x2, y2, cx: (x1 + x2) / 2, cy: lift };
  }

  function drawHazards(ctx) {
    const selected = model.get("selected_hazard");
    const color = summary.hazard_color || "#d62728";
    hazardPaths = [];
    let drawn = 0;
    for (const hazard of hazards) {
      if (!hazard.arrow) continue;
      const p = arrowPath(hazard.arrow);
      hazardPaths.push({ index: hazard.index, path: p });
      const lo = Math.min(p.x1, p.x2);
      const hi = Math.max(p.x1, p.x2);
      if (hi < LABEL_WIDTH || lo > width) continue;
      drawn++;
      ctx.save();
      ctx.beginPath();
      ctx.rect(LABEL_WIDTH, 0, width - LABEL_WIDTH, lanesHeight());
      ctx.clip();
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
      ctx.restore();
    }
    return drawn;
  }

  function rowsOf(ids) {
    const wanted = new Set(ids);
    const rows = [];
    const { columns, count } = data;
    if (!wanted.size) return rows;
    for (let i = 0; i < count; i++) if (wanted.has(columns.id[i])) rows.push(i);
    return rows;
  }

  function drawSelection(ctx) {
    const ids = model.get("selected_commands") || [];
    const { columns } = data;
    ctx.save();
    ctx.beginPath();
    ctx.rect(LABEL_WIDTH, 0, width - LABEL_WIDTH, lanesHeight());
    ctx.clip();
    for (const row of rowsOf(ids)) {
      const box = rectOfRow(row);
      ctx.strokeStyle = "#000";
      ctx.lineWidth = 2;
      ctx.strokeRect(box.x - 1, box.y - 1, box.w + 2, box.h + 2);
      if (!Number.isNaN(columns.host[row])) {
        const x = xOf(columns.start[row] + columns.host[row]);
        ctx.beginPath();
        ctx.arc(x, markerY() - 1, 7, 0, 2 * Math.PI);
        ctx.stroke();
      }
    }
    ctx.restore();
  }

  // Vertical grid lines at the axis ticks, under everything else.
  function drawGrid(ctx, height) {
    const step = niceStep(view.t1 - view.t0, plotWidth());
    ctx.strokeStyle = "rgba(0,0,0,0.08)";
    for (let t = Math.ceil(view.t0 / step) * step; t <= view.t1; t += step) {
      const x = Math.round(xOf(t)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(x, AXIS_HEIGHT - 4);
      ctx.lineTo(x, height);
      ctx.stroke();
    }
  }

  function drawAxis(ctx) {
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, width, AXIS_HEIGHT - 4);
    const step = niceStep(view.t1 - view.t0, plotWidth());
    ctx.fillStyle = "#444";
    ctx.font = "11px sans-serif";
    ctx.textBaseline = "middle";
    for (let t = Math.ceil(view.t0 / step) * step; t <= view.t1; t += step) {
      ctx.fillText(formatTime(t, step), Math.round(xOf(t)) + 3, AXIS_HEIGHT / 2 - 2);
    }
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, LABEL_WIDTH - 1, AXIS_HEIGHT);
    ctx.fillStyle = "#666";
    ctx.fillText(`${data.count.toLocaleString()} records`, 6, AXIS_HEIGHT / 2);
  }

  function rectOfRow(row) {
    const { columns } = data;
    const [y, h] = barBox(columns.lane[row]);
    const x0 = xOf(columns.start[row]);
    const x1 = xOf(columns.start[row] + columns.duration[row]);
    const w = Math.max(x1 - x0, MIN_BAR);
    return { x: x1 - x0 >= MIN_BAR ? x0 : x0 - (w - (x1 - x0)) / 2, y, w, h };
  }

  // The CSS-pixel box of record `id`'s bar inside the canvas (test hook).
  function barRect(id) {
    const rows = rowsOf([id]);
    return rows.length ? rectOfRow(rows[0]) : null;
  }

  // The CSS-pixel middle of hazard `index`'s arrow (test hook).
  function arrowPoint(index) {
    const found = hazardPaths.find((h) => h.index === index);
    if (!found) return null;
    const p = found.path;
    return { x: 0.25 * p.x1 + 0.5 * p.cx + 0.25 * p.x2, y: 0.25 * p.y1 + 0.5 * p.cy + 0.25 * p.y2 };
  }

  function nearCurve(p, x, y) {
    for (let k = 0; k <= 24; k++) {
      const t = k / 24;
      const px = (1 - t) * (1 - t) * p.x1 + 2 * (1 - t) * t * p.cx + t * t * p.x2;
      const py = (1 - t) * (1 - t) * p.y1 + 2 * (1 - t) * t * p.cy + t * t * p.y2;
      if (Math.hypot(px - x, py - y) <= 6) return true;
    }
    return false;
  }

  // What is under (x, y) in CSS pixels: {hazard}, {row} or null.
  function hitAt(x, y) {
    if (x < LABEL_WIDTH) return null;
    for (const { index, path } of hazardPaths) if (nearCurve(path, x, y)) return { hazard: index };
    const lane = laneAt(y);
    if (lane < 0) return null;
    const { columns, byLane, maxDuration } = data;
    const t = timeOf(x);
    const tolerance = (HIT_PIXELS / plotWidth()) * (view.t1 - view.t0);
    if (lane === 0 && Math.abs(y - markerY()) <= 7) {
      const order = hostOrder();
      let best = null;
      let k = firstAtOrAfter(order.times, t - tolerance);
      for (; k < order.times.length && order.times[k] <= t + tolerance; k++) {
        const gap = Math.abs(order.times[k] - t);
        if (!best || gap < best.gap) best = { row: order.rows[k], gap };
      }
      if (best) return { row: best.row, marker: true };
    }
    const [barY, barH] = barBox(lane);
    if (y < barY - 3 || y > barY + barH + 3) return null;
    const rows = byLane[lane];
    let best = null;
    let i = lowerBound(rows, columns.start, t - tolerance - maxDuration[lane]);
    for (; i < rows.length; i++) {
      const row = rows[i];
      const start = columns.start[row];
      if (start > t + tolerance) break;
      const end = start + columns.duration[row];
      if (end < t - tolerance) continue;
      const gap = t < start ? start - t : t > end ? t - end : 0;
      if (!best || gap < best.gap || (gap === best.gap && columns.duration[row] < columns.duration[best.row])) {
        best = { row, gap };
      }
    }
    return best ? { row: best.row } : null;
  }

  function recordHtml(row, marker) {
    const { columns } = data;
    const kind = summary.kinds[columns.kind[row]].name;
    const lane = summary.lanes[columns.lane[row]];
    const start = columns.start[row];
    const duration = columns.duration[row];
    const lines = [`<b>#${columns.id[row]} ${escapeHtml(summary.texts[columns.text[row]])}</b>`];
    const where = lane.stream === null ? "host" : `stream ${escapeHtml(lane.name)}`;
    lines.push(`${kind} · ${where} · ${summary.statuses[columns.status[row]]}`);
    lines.push(`start ${formatTime(start)} · took ${formatTime(duration)}`);
    if (!Number.isNaN(columns.host[row])) {
      const what = kind === "upload" ? "host read" : "host write";
      const offset = columns.host[row];
      const relation = offset < 0 ? `${formatTime(-offset)} before it started` : `${formatTime(offset)} after it started`;
      lines.push(`${marker ? "<b>" : ""}${what} at ${formatTime(start + offset)}${marker ? "</b>" : ""} (${relation})`);
    }
    if (data.hazardIds.has(columns.id[row])) lines.push('<span class="lnb-bad">part of a hazard</span>');
    return lines.join("<br>");
  }

  function hazardHtml(index) {
    const hazard = hazards[index];
    return `<b class="lnb-bad">${hazard.kind}</b><br>${escapeHtml(hazard.message)}<br><i>fix: ${escapeHtml(hazard.fix)}</i>`;
  }

  function showTooltip(hit, x, y) {
    if (!hit) {
      tooltip.hidden = true;
      return;
    }
    tooltip.innerHTML = hit.hazard !== undefined ? hazardHtml(hit.hazard) : recordHtml(hit.row, hit.marker);
    tooltip.hidden = false;
    const left = Math.min(x + 14, Math.max(width - 380, 0));
    tooltip.style.left = `${left}px`;
    tooltip.style.top = `${y + 16}px`;
  }

  function setView(t0, t1) {
    const [e0, e1] = (summary.meta && summary.meta.extent) || [0, 1];
    const limit = Math.max(e1 - e0, 1e-3) * 4;
    const span = Math.min(Math.max(t1 - t0, 1e-4), limit);
    const centre = (t0 + t1) / 2;
    view = { t0: centre - span / 2, t1: centre + span / 2 };
    draw();
  }

  function zoom(factor, x) {
    const anchor = timeOf(x === undefined ? LABEL_WIDTH + plotWidth() / 2 : x);
    const t0 = anchor - (anchor - view.t0) * factor;
    const t1 = anchor + (view.t1 - anchor) * factor;
    setView(t0, t1);
  }

  // Bring hazard `index` into view: its arrow and both commands' bars, with a margin.
  function showHazard(index) {
    const hazard = hazards[index];
    if (!hazard) return;
    const times = [];
    if (hazard.arrow) times.push(hazard.arrow.from.time, hazard.arrow.to.time);
    for (const row of rowsOf(hazard.command_ids)) {
      times.push(data.columns.start[row], data.columns.start[row] + data.columns.duration[row]);
    }
    if (!times.length) return;
    const lo = Math.min(...times);
    const hi = Math.max(...times);
    if (lo >= view.t0 && hi <= view.t1 && hi - lo > (view.t1 - view.t0) / 50) return;
    const pad = Math.max(hi - lo, 1) * 0.4;
    setView(lo - pad, hi + pad);
  }

  function button(label, title, action) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = label;
    b.title = title;
    b.addEventListener("click", action);
    toolbar.append(b);
    return b;
  }

  function legend() {
    const present = new Set(data.columns.kind || []);
    const box = document.createElement("span");
    box.className = "lnb-legend";
    summary.kinds.forEach((kind, code) => {
      if (!present.has(code)) return;
      const item = document.createElement("span");
      item.innerHTML = `<i style="background:${kind.color}"></i>${kind.name}`;
      box.append(item);
    });
    const marks = document.createElement("span");
    marks.textContent = "▼ host read  ▲ host write";
    box.append(marks);
    if (hazards.length) {
      const item = document.createElement("span");
      item.innerHTML = `<i style="background:${summary.hazard_color}"></i>hazard`;
      box.append(item);
    }
    toolbar.append(box);
  }

  function buildToolbar() {
    toolbar.replaceChildren();
    button("Fit", "show the whole trace (double-click the timeline)", () => {
      view = fullView();
      draw();
    });
    button("+", "zoom in (mouse wheel)", () => zoom(0.5));
    button("−", "zoom out (mouse wheel)", () => zoom(2));
    legend();
  }

  let drag = null;
  function localPoint(event) {
    const box = canvas.getBoundingClientRect();
    return [event.clientX - box.left, event.clientY - box.top];
  }
  function onWheel(event) {
    event.preventDefault();
    const [x] = localPoint(event);
    zoom(Math.exp(Math.max(Math.min(event.deltaY, 200), -200) * 0.002), x);
  }
  function onDown(event) {
    const [x] = localPoint(event);
    drag = { x, view: { ...view }, moved: false };
  }
  function onMove(event) {
    const [x, y] = localPoint(event);
    if (drag && event.buttons & 1) {
      const dx = x - drag.x;
      if (Math.abs(dx) > 2) drag.moved = true;
      if (drag.moved) {
        const shift = (dx / plotWidth()) * (drag.view.t1 - drag.view.t0);
        view = { t0: drag.view.t0 - shift, t1: drag.view.t1 - shift };
        draw();
        tooltip.hidden = true;
        return;
      }
    }
    showTooltip(hitAt(x, y), x, y);
  }
  function onUp(event) {
    const wasDrag = drag && drag.moved;
    drag = null;
    if (wasDrag) return;
    const [x, y] = localPoint(event);
    const hit = hitAt(x, y);
    if (hit && hit.hazard !== undefined) {
      model.set("selected_hazard", hit.hazard);
    } else if (hit) {
      model.set("selected_command", data.columns.id[hit.row]);
    } else {
      model.set("selected_command", null);
    }
    model.save_changes();
  }
  function onLeave() {
    tooltip.hidden = true;
    drag = null;
  }
  function onDoubleClick() {
    view = fullView();
    draw();
  }

  canvas.addEventListener("wheel", onWheel, { passive: false });
  canvas.addEventListener("mousedown", onDown);
  canvas.addEventListener("mousemove", onMove);
  canvas.addEventListener("mouseup", onUp);
  canvas.addEventListener("mouseleave", onLeave);
  canvas.addEventListener("dblclick", onDoubleClick);

  const onSelection = () => draw();
  const onHazard = () => {
    const index = model.get("selected_hazard");
    if (index !== null && index !== undefined) showHazard(index);
    draw();
  };
  const onData = () => {
    summary = model.get("summary") || {};
    hazards = model.get("hazards") || [];
    data = decode(summary, model.get("data"), hazards);
    view = fullView();
    buildToolbar();
    resize();
    draw();
  };
  model.on("change:selected_commands", onSelection);
  model.on("change:selected_hazard", onHazard);
  model.on("change:data", onData);
  model.on("change:summary", onData);
  model.on("change:hazards", onData);

  let observer = null;
  if (typeof ResizeObserver !== "undefined") {
    observer = new ResizeObserver(() => {
      const measured = frame.clientWidth;
      if (measured && Math.abs(measured - width) > 1) {
        resize();
        draw();
      }
    });
    observer.observe(frame);
  }

  buildToolbar();
  resize();
  draw();

  return () => {
    observer && observer.disconnect();
    model.off("change:selected_commands", onSelection);
    model.off("change:selected_hazard", onHazard);
    model.off("change:data", onData);
    model.off("change:summary", onData);
    model.off("change:hazards", onData);
    const list = registry().timelines;
    const at = list.indexOf(entry);
    if (at >= 0) list.splice(at, 1);
  };
}

export default { render };
