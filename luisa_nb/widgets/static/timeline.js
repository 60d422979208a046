// Timeline of a luisa_nb trace: a host lane and one lane per stream, each record a bar
// coloured by kind, host reads/writes as markers on the host lane, hazards as arrows.
// anywidget renderer: export render({model, el}); the static page calls it with a shim.
//
// Model keys read: summary (JSON: layout, lanes, kinds, texts, meta), hazards (JSON),
// data (the packed columns, bytes), selected_command, selected_hazard, selected_commands.
// Keys written (on click): selected_command, selected_hazard.
//
// Zoomed out, bars narrower than MIN_BAR device pixels are aggregated into one run per
// pixel column per lane, so a draw costs O(records in view) + O(width x lanes) rects.
//
// Every colour but the kinds' comes from the --lnb-* properties of widgets.css, read on
// each draw, so the canvas follows JupyterLab's light and dark themes (and a live switch).
// The view opens on the first hazard; Fit shows the whole trace. Ctrl/⌘+wheel zooms about
// the pointer, Shift+wheel or a horizontal wheel pans, a plain wheel scrolls the page.
// With the timeline focused: W/S zoom, A/D pan, F or 0 fits, Esc drops the measurement.
// Shift+drag (or a drag with the ruler on) measures a span.

export function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "lnb-timeline";
  const toolbar = document.createElement("div");
  toolbar.className = "lnb-toolbar";
  const frame = document.createElement("div");
  frame.className = "lnb-timeline-frame";
  frame.tabIndex = 0;
  frame.setAttribute("role", "figure");
  frame.setAttribute("aria-label", "timeline: W/S zoom, A/D pan, F fit");
  const canvas = document.createElement("canvas");
  canvas.className = "lnb-timeline-canvas";
  // the pointer's time line and the measured span, redrawn alone as the pointer moves
  const cursorLayer = document.createElement("canvas");
  cursorLayer.className = "lnb-timeline-cursor";
  cursorLayer.style.cssText = "position:absolute;left:0;top:0;pointer-events:none";
  const tooltip = document.createElement("div");
  tooltip.className = "lnb-tooltip";
  tooltip.hidden = true;
  frame.append(canvas, cursorLayer, tooltip);
  root.append(toolbar, frame);
  el.replaceChildren(root);

  let summary = model.get("summary") || {};
  let hazards = model.get("hazards") || [];
  let data = decode(summary, model.get("data"), hazards);
  let view = initialView();
  let width = 0;
  let hazardPaths = [];
  let theme = { ...THEME };
  let inks = [];
  const patterns = new Map();
  const textWidths = new Map();
  let cursorX = null;
  let measure = null;
  let ruler = false;
  let ownSelection = false;
  const stats = {
    draws: 0,
    firstDrawMs: null,
    lastDrawMs: null,
    loadedAt: performance.now(),
    measure: null,
    cursor: null,
  };
  const entry = {
    root,
    stats,
    barRect,
    arrowPoint,
    arrowPath: (index) => {
      const found = hazardPaths.find((h) => h.index === index);
      return found ? { ...found.path } : null;
    },
    view: () => ({ ...view }),
    setView,
    fit,
    extent: () => [...extent()],
    geometry,
    hit: hitAt,
  };
  registry().timelines.push(entry);

  function extent() {
    return (summary.meta && summary.meta.extent) || [0, 1];
  }

  function fullView() {
    const [t0, t1] = extent();
    const span = Math.max(t1 - t0, 1e-3);
    return { t0: t0 - span * 0.02, t1: t1 + span * 0.02 };
  }

  // The times hazard `hazard` spans: its arrow's ends and its commands' bars.
  function hazardSpan(hazard) {
    const times = [];
    if (hazard.arrow) times.push(hazard.arrow.from.time, hazard.arrow.to.time);
    for (const row of rowsOf(hazard.command_ids)) {
      times.push(data.columns.start[row], data.columns.start[row] + data.columns.duration[row]);
    }
    return times.length ? [Math.min(...times), Math.max(...times)] : null;
  }

  // A view showing [lo, hi] with a margin of `margin` of its length on each side.
  function viewAround([lo, hi], margin) {
    const pad = Math.max(hi - lo, 1e-3) * margin;
    return clampView(lo - pad, hi + pad);
  }

  // The first hazard with its commands and arrow filling most of the plot; the whole
  // trace when there is no hazard.
  function initialView() {
    for (const hazard of hazards) {
      const span = hazardSpan(hazard);
      if (span) return viewAround(span, 0.15);
    }
    return fullView();
  }

  function laneHeightOf(lane) {
    return lane === 0 ? HOST_LANE_HEIGHT : LANE_HEIGHT;
  }

  // What overlays.js's drawOverlays needs to draw in step with the bars: the time -> x
  // mapping and back, the lanes' boxes, the plot's size (numbers, in CSS pixels) and the
  // theme colours of this draw.
  function geometry() {
    return {
      xOf,
      timeOf,
      laneTop,
      laneHeight: laneHeightOf,
      barBox,
      markerY,
      LABEL_WIDTH,
      AXIS_HEIGHT,
      plotWidth: plotWidth(),
      width,
      height: lanesHeight(),
      view: { ...view },
      lanes: summary.lanes,
      theme: { ...theme },
    };
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
    cursorLayer.width = canvas.width;
    cursorLayer.height = canvas.height;
    cursorLayer.style.width = canvas.style.width;
    cursorLayer.style.height = canvas.style.height;
  }

  // Re-read the theme colours; true when they changed since the last read.
  function refreshTheme() {
    const next = readTheme(root);
    const changed = JSON.stringify(next) !== JSON.stringify(theme);
    theme = next;
    return changed;
  }

  function draw() {
    const began = performance.now();
    if (!width) resize();
    const ctx = canvas.getContext("2d");
    const ratio = canvas.width / width;
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    const height = lanesHeight();
    refreshTheme();
    ctx.fillStyle = theme.bg;
    ctx.fillRect(0, 0, width, height);
    const colors = summary.kinds.map((k) => k.color);
    inks = colors.map(inkOn);
    const counts = drawLanes(ctx, colors, height);
    stats.overlays = drawOverlays(ctx, summary, geometry());
    const arrows = drawHazards(ctx);
    const markers = drawMarkers(ctx, colors);
    drawSelection(ctx);
    drawAxis(ctx);
    drawCursor();
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
    root.dataset.labels = String(counts.labels);
  }

  function drawLanes(ctx, colors, height) {
    const { columns, byLane, maxDuration, statusMark } = data;
    const plot = plotWidth();
    const scale = plot / (view.t1 - view.t0);
    const laneRecords = [];
    const labelled = [];
    let rects = 0;
    let records = 0;
    let labels = 0;
    const columnsWide = Math.ceil(plot) + 1;
    // per pixel column: the kind drawn (ran), the kind of records that never ran, failures
    const column = new Int16Array(columnsWide);
    const ghost = new Int16Array(columnsWide);
    const failed = new Int16Array(columnsWide);
    for (let lane = 0; lane < summary.lanes.length; lane++) {
      const top = laneTop(lane);
      const laneHeight = laneHeightOf(lane);
      if (lane % 2) {
        ctx.globalAlpha = 0.6;
        ctx.fillStyle = theme.bgAlt;
        ctx.fillRect(0, top, width, laneHeight);
        ctx.globalAlpha = 1;
      }
      ctx.strokeStyle = theme.border;
      ctx.beginPath();
      ctx.moveTo(0, top + laneHeight - 0.5);
      ctx.lineTo(width, top + laneHeight - 0.5);
      ctx.stroke();
    }
    drawGrid(ctx, height);
    drawLinks(ctx);
    ctx.font = FONT;
    ctx.textBaseline = "middle";
    for (let lane = 0; lane < summary.lanes.length; lane++) {
      const top = laneTop(lane);
      const laneHeight = laneHeightOf(lane);
      const rows = byLane[lane];
      const [y, h] = barBox(lane);
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
          drawBar(ctx, kind, mark, x, y, w, h, colors);
          rects++;
          if (w >= LABEL_MIN_WIDTH && h >= 12) {
            const from = Math.max(left, 0);
            const room = Math.min(right, plot) - from - 8;
            const text = fitText(ctx, summary.texts[columns.text[row]], room, textWidths);
            if (text) {
              ctx.fillStyle = mark === NOT_RUN ? theme.fg : inks[kind];
              ctx.fillText(text, LABEL_WIDTH + from + 4, y + h / 2 + (mark === FAILED ? 1 : 0));
              labels++;
              if (labelled.length < 200) labelled.push({ id: columns.id[row], text });
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
      rects += eachRun(column, plot, (kind, c, end) => {
        ctx.fillStyle = colors[kind];
        ctx.fillRect(LABEL_WIDTH + c, y, end - c, h);
      });
      // never-run records this narrow still show as a 3-pixel hatched, outlined box
      rects += eachRun(ghost, plot, (kind, c, end) => {
        drawBar(ctx, kind, NOT_RUN, LABEL_WIDTH + c - 1, y, end - c + 2, h, colors);
      });
      rects += eachRun(failed, plot, (flag, c, end) => {
        ctx.fillStyle = theme.hazard;
        ctx.fillRect(LABEL_WIDTH + c, y, end - c, 3);
      });
      laneRecords.push(drawn);
      records += drawn;
      ctx.fillStyle = theme.bg;
      ctx.fillRect(0, top, LABEL_WIDTH - 2, laneHeight - 1);
      ctx.fillStyle = theme.fg;
      ctx.font = "12px sans-serif";
      const name = lane === 0 ? "host" : summary.lanes[lane].name;
      ctx.fillText(fitText(ctx, name, LABEL_WIDTH - 12, textWidths), 6, top + laneHeight / 2);
      ctx.font = FONT;
    }
    ctx.strokeStyle = theme.border;
    ctx.beginPath();
    ctx.moveTo(LABEL_WIDTH - 0.5, AXIS_HEIGHT);
    ctx.lineTo(LABEL_WIDTH - 0.5, height);
    ctx.stroke();
    return { laneRecords, rects, records, labels, labelled };
  }

  // One bar: solid in its kind's colour, a stripe on top if it failed, hatched and
  // outlined if it never ran.
  function drawBar(ctx, kind, mark, x, y, w, h, colors) {
    if (mark === NOT_RUN) {
      const color = colors[kind];
      if (!patterns.has(color)) patterns.set(color, hatchPattern(ctx, color));
      ctx.fillStyle = patterns.get(color);
      ctx.fillRect(x, y, w, h);
      ctx.strokeStyle = color;
      ctx.lineWidth = 1;
      ctx.strokeRect(x + 0.5, y + 0.5, Math.max(w - 1, 1), h - 1);
      return;
    }
    ctx.fillStyle = colors[kind];
    ctx.fillRect(x, y, w, h);
    if (mark === FAILED) {
      ctx.fillStyle = theme.hazard;
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
    ctx.strokeStyle = theme.fgMuted;
    ctx.globalAlpha = 0.55;
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
      const color = hazard.kind === LATENT ? theme.latent : theme.hazard;
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
      ctx.strokeStyle = theme.fg;
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
    ctx.strokeStyle = theme.border;
    ctx.beginPath();
    for (const t of ticks()) {
      const x = Math.round(xOf(t)) + 0.5;
      ctx.moveTo(x, AXIS_HEIGHT - 4);
      ctx.lineTo(x, height);
    }
    ctx.stroke();
  }

  // The axis's tick times (every `step` µs) in view, and that step.
  function ticks() {
    const step = niceStep(view.t1 - view.t0, plotWidth());
    const first = Math.ceil(view.t0 / step);
    const times = [];
    for (let k = first; k * step <= view.t1 && times.length < 1000; k++) times.push(k * step);
    times.step = step;
    return times;
  }

  // The time axis on top: a tick and a label every `step`; deep in, labels are offsets
  // from a base time shown in the label column.
  function drawAxis(ctx) {
    ctx.fillStyle = theme.bg;
    ctx.fillRect(0, 0, width, AXIS_HEIGHT - 4);
    const times = ticks();
    const base = times.length ? axisBase(times[0], times.step) : null;
    ctx.font = FONT;
    ctx.textBaseline = "middle";
    ctx.fillStyle = theme.fg;
    stats.axis = [];
    for (const t of times) {
      const x = Math.round(xOf(t));
      ctx.fillRect(x, AXIS_HEIGHT - 8, 1, 4);
      const label = base === null ? formatTime(t, times.step) : `+${formatTime(t - base, times.step)}`;
      ctx.fillText(label, x + 3, AXIS_HEIGHT / 2 - 2);
      stats.axis.push(label);
    }
    ctx.fillStyle = theme.bg;
    ctx.fillRect(0, 0, LABEL_WIDTH - 1, AXIS_HEIGHT);
    ctx.fillStyle = theme.fgMuted;
    const note = base === null ? `${data.count.toLocaleString()} records` : `${formatTime(base, times.step * 1000)} +`;
    ctx.fillText(note, 6, AXIS_HEIGHT / 2);
  }

  // A label in a box centred on x in the axis strip, kept inside the plot.
  function axisTag(ctx, text, x, fill, ink, edge) {
    const w = ctx.measureText(text).width + 8;
    const left = Math.min(Math.max(x - w / 2, LABEL_WIDTH), width - w);
    ctx.fillStyle = fill;
    ctx.fillRect(left, 1, w, AXIS_HEIGHT - 6);
    if (edge) {
      ctx.strokeStyle = edge;
      ctx.strokeRect(left + 0.5, 1.5, w - 1, AXIS_HEIGHT - 7);
    }
    ctx.fillStyle = ink;
    ctx.fillText(text, left + 4, AXIS_HEIGHT / 2 - 2);
  }

  // The cursor layer: the measured span with its duration, and a line at the pointer
  // with the time under it.
  function drawCursor() {
    const ctx = cursorLayer.getContext("2d");
    const ratio = cursorLayer.width / width;
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    const height = lanesHeight();
    ctx.clearRect(0, 0, width, height);
    ctx.save();
    ctx.beginPath();
    ctx.rect(LABEL_WIDTH, 0, width - LABEL_WIDTH, height);
    ctx.clip();
    ctx.font = FONT;
    ctx.textBaseline = "middle";
    stats.measure = null;
    if (measure) {
      const t0 = Math.min(measure.t0, measure.t1);
      const t1 = Math.max(measure.t0, measure.t1);
      const [a, b] = [xOf(t0), xOf(t1)];
      ctx.globalAlpha = 0.16;
      ctx.fillStyle = theme.link;
      ctx.fillRect(a, AXIS_HEIGHT - 4, Math.max(b - a, 1), height);
      ctx.globalAlpha = 1;
      ctx.fillRect(Math.round(a), 0, 1, height);
      ctx.fillRect(Math.round(b), 0, 1, height);
      const text = `Δ ${formatTime(t1 - t0)}`;
      axisTag(ctx, text, (a + b) / 2, theme.bg, theme.fg, theme.link);
      stats.measure = { t0, t1, duration: t1 - t0, text };
    }
    stats.cursor = null;
    if (cursorX !== null) {
      const time = timeOf(cursorX);
      ctx.fillStyle = theme.fgMuted;
      ctx.fillRect(Math.round(cursorX), AXIS_HEIGHT - 4, 1, height);
      const text = formatTime(time, ticks().step / 10);
      if (!(drag && drag.measure && drag.moved)) axisTag(ctx, text, cursorX, theme.fg, theme.bg);
      stats.cursor = { x: cursorX, time, text };
    }
    ctx.restore();
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

  // What is under (x, y) in CSS pixels: {row}, {row, marker} or {hazard}, or null. The
  // bar under the pointer in its lane comes first, then host markers, then arrows.
  function hitAt(x, y) {
    if (x < LABEL_WIDTH) return null;
    const lane = laneAt(y);
    if (lane >= 0) {
      const bar = barAt(lane, x, y);
      if (bar !== null) return { row: bar };
      const marker = lane === 0 ? markerAt(x, y) : null;
      if (marker !== null) return { row: marker, marker: true };
    }
    for (const { index, path } of hazardPaths) if (nearCurve(path, x, y)) return { hazard: index };
    return null;
  }

  // The row whose bar, as drawn (at least MIN_BAR wide), is at (x, y) in `lane`, or within
  // HIT_PIXELS of it; of several, the nearest, then the narrowest (a thin bar drawn over a
  // neighbour's edge wins there), then the one centred nearest x.
  function barAt(lane, x, y) {
    const [barY, barH] = barBox(lane);
    if (y < barY - 3 || y > barY + barH + 3) return null;
    const { columns, byLane, maxDuration } = data;
    const perPixel = (view.t1 - view.t0) / plotWidth();
    const t = timeOf(x);
    const reach = (HIT_PIXELS + MIN_BAR) * perPixel;
    const rows = byLane[lane];
    let best = null;
    let i = lowerBound(rows, columns.start, t - reach - maxDuration[lane]);
    for (; i < rows.length; i++) {
      const row = rows[i];
      const start = columns.start[row];
      if (start > t + reach) break;
      const box = rectOfRow(row);
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
  function markerAt(x, y) {
    if (Math.abs(y - markerY()) > 7) return null;
    const tolerance = (HIT_PIXELS / plotWidth()) * (view.t1 - view.t0);
    const t = timeOf(x);
    const order = hostOrder();
    let best = null;
    let k = firstAtOrAfter(order.times, t - tolerance);
    for (; k < order.times.length && order.times[k] <= t + tolerance; k++) {
      const gap = Math.abs(order.times[k] - t);
      if (!best || gap < best.gap) best = { row: order.rows[k], gap };
    }
    return best ? best.row : null;
  }

  // The tooltip of a record: lines of text nodes and elements, names always as text.
  function recordLines(row, marker) {
    const { columns } = data;
    const kind = summary.kinds[columns.kind[row]].name;
    const lane = summary.lanes[columns.lane[row]];
    const start = columns.start[row];
    const duration = columns.duration[row];
    const lines = [[element("b", "", `#${columns.id[row]} ${summary.texts[columns.text[row]]}`)]];
    const where = lane.stream === null ? "host" : `stream ${lane.name}`;
    lines.push([`${kind} · ${where} · ${summary.statuses[columns.status[row]]}`]);
    if (data.statusMark[columns.status[row]] === NOT_RUN) {
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
    if (data.hazardIds.has(columns.id[row])) lines.push([element("span", "lnb-bad", "part of a hazard")]);
    return lines;
  }

  function hazardLines(index) {
    const hazard = hazards[index];
    return [[element("b", "lnb-bad", hazard.kind)], [hazard.message], [element("i", "", `fix: ${hazard.fix}`)]];
  }

  function showTooltip(hit, x, y) {
    if (!hit) {
      tooltip.hidden = true;
      return;
    }
    const lines = hit.hazard !== undefined ? hazardLines(hit.hazard) : recordLines(hit.row, hit.marker);
    tooltip.replaceChildren(...lines.flatMap((parts, i) => (i ? [element("br"), ...parts] : parts)));
    tooltip.hidden = false;
    const left = Math.min(x + 14, Math.max(width - 380, 0));
    tooltip.style.left = `${left}px`;
    tooltip.style.top = `${y + 16}px`;
  }

  // The view [t0, t1], its span kept between 1e-4 µs and 4x the trace, its centre inside
  // the trace.
  function clampView(t0, t1) {
    const [e0, e1] = extent();
    const limit = Math.max(e1 - e0, 1e-3) * 4;
    const span = Math.min(Math.max(t1 - t0, 1e-4), limit);
    const centre = Math.min(Math.max((t0 + t1) / 2, e0), e1);
    return { t0: centre - span / 2, t1: centre + span / 2 };
  }

  function setView(t0, t1) {
    view = clampView(t0, t1);
    draw();
  }

  function fit() {
    view = fullView();
    draw();
  }

  // Zoom by `factor` (< 1: in) about x (CSS pixels; the plot's middle by default).
  function zoom(factor, x) {
    const anchor = timeOf(x === undefined || x === null ? LABEL_WIDTH + plotWidth() / 2 : x);
    const t0 = anchor - (anchor - view.t0) * factor;
    const t1 = anchor + (view.t1 - anchor) * factor;
    setView(t0, t1);
  }

  // Pan by `fraction` of the view's span (> 0: later).
  function pan(fraction) {
    const shift = fraction * (view.t1 - view.t0);
    setView(view.t0 + shift, view.t1 + shift);
  }

  // Whether [lo, hi] lies inside the view, off its edges, and fills at least `share` of it.
  function comfortable(lo, hi, share) {
    const span = view.t1 - view.t0;
    const margin = span * 0.03;
    return lo >= view.t0 + margin && hi <= view.t1 - margin && hi - lo >= share * span;
  }

  // Bring hazard `index` into view (its arrow and both commands' bars, with a margin),
  // unless it already is, comfortably.
  function showHazard(index) {
    const hazard = hazards[index];
    const span = hazard ? hazardSpan(hazard) : null;
    if (!span || comfortable(span[0], span[1], 0.25)) return;
    view = viewAround(span, 0.15);
    draw();
  }

  // Bring command `id` into view, with its host read or write when that is close enough
  // to show both, unless it is already comfortably in view (inside, and at least 4 pixels
  // wide unless an instant): panned there at this zoom when that shows it, else zoomed.
  function showCommand(id) {
    const [row] = rowsOf([id]);
    if (row === undefined) return;
    const { columns } = data;
    const start = columns.start[row];
    const end = start + columns.duration[row];
    const host = start + columns.host[row];
    let [lo, hi] = [start, end];
    if (!Number.isNaN(host) && Math.max(end, host) - Math.min(start, host) <= 20 * (end - start)) {
      [lo, hi] = [Math.min(start, host), Math.max(end, host)];
    }
    const span = view.t1 - view.t0;
    const wide = end === start || ((end - start) / span) * plotWidth() >= 4;
    if (wide && comfortable(lo, hi, 0)) return;
    if (wide && hi - lo <= 0.8 * span) {
      view = clampView((lo + hi) / 2 - span / 2, (lo + hi) / 2 + span / 2);
    } else {
      view = viewAround([lo, hi], 1);
    }
    draw();
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

  // One legend entry: a swatch (`icon`) and its name; `mark` names it for tests and styles.
  function legendItem(box, mark, icon, name) {
    const item = element("span", "", name);
    item.dataset.mark = mark;
    item.prepend(icon);
    box.append(item);
  }

  // A legend swatch: a `tag` element with a class, and optionally an inline style and a symbol.
  function swatch(tag, className, style, symbol) {
    const node = element(tag, className, symbol);
    if (style) node.style.cssText = style;
    return node;
  }

  // The hazard arrow's swatch, coloured by its entry's CSS (currentColor).
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

  // Every mark the canvas can draw for this trace: the kinds present, host read/write
  // markers, failed and never-run bars, and the hazard arrows by colour.
  function legend() {
    const { columns, count, statusMark } = data;
    const kinds = new Set();
    const statuses = new Set();
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
    toolbar.append(box);
  }

  function buildToolbar() {
    toolbar.replaceChildren();
    button("Fit", "show the whole trace (F or 0, or double-click the timeline)", fit);
    button("+", "zoom in (W, or Ctrl/⌘ + wheel)", () => zoom(0.5));
    button("−", "zoom out (S, or Ctrl/⌘ + wheel)", () => zoom(2));
    const rulerButton = button("Ruler", "measure: drag across the timeline (or Shift + drag); Esc clears", () => {
      ruler = !ruler;
      rulerButton.setAttribute("aria-pressed", String(ruler));
    });
    rulerButton.setAttribute("aria-pressed", "false");
    legend();
    const hint = document.createElement("span");
    hint.className = "lnb-hint";
    hint.textContent = "keys W/S zoom · A/D pan · F fit · Ctrl+wheel zoom · Shift+drag measure";
    hint.title =
      "Ctrl/⌘ + wheel: zoom about the pointer\nShift + wheel: pan\nWith the timeline focused (click it or Tab to it):\n  W / S: zoom in / out\n  A / D: pan left / right\n  F or 0: fit the whole trace\n  Esc: clear the measurement\nShift + drag: measure a span\nDrag: pan · double-click: fit";
    toolbar.append(hint);
  }

  let drag = null;
  function localPoint(event) {
    const box = canvas.getBoundingClientRect();
    return [event.clientX - box.left, event.clientY - box.top];
  }
  // A plain vertical wheel is the page's (it scrolls the notebook); Ctrl/⌘ + wheel zooms
  // about the pointer; Shift + wheel or a horizontal wheel pans.
  function onWheel(event) {
    const unit = event.deltaMode === 1 ? 16 : event.deltaMode === 2 ? plotWidth() : 1;
    const dx = event.deltaX * unit;
    const dy = event.deltaY * unit;
    if (event.ctrlKey || event.metaKey) {
      event.preventDefault();
      const [x] = localPoint(event);
      zoom(Math.exp(Math.max(Math.min(dy, 200), -200) * 0.002), Math.max(x, LABEL_WIDTH));
    } else if (event.shiftKey || Math.abs(dx) > Math.abs(dy)) {
      const delta = Math.abs(dx) > Math.abs(dy) ? dx : dy;
      if (!delta) return;
      event.preventDefault();
      pan(Math.max(Math.min(delta, 400), -400) / plotWidth());
    }
  }
  function onKey(event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const key = event.key.toLowerCase();
    const at = cursorX;
    if (key === "w") zoom(KEY_ZOOM, at);
    else if (key === "s") zoom(1 / KEY_ZOOM, at);
    else if (key === "a") pan(-KEY_PAN);
    else if (key === "d") pan(KEY_PAN);
    else if (key === "f" || key === "0") fit();
    else if (key === "escape" && measure) {
      measure = null;
      drawCursor();
    } else return;
    // handled here: not a notebook shortcut, not a page scroll
    event.preventDefault();
    event.stopPropagation();
  }
  function onDown(event) {
    if (event.button !== 0) return;
    event.preventDefault();
    frame.focus({ preventScroll: true });
    const [x] = localPoint(event);
    drag = { x, view: { ...view }, moved: false, measure: (event.shiftKey || ruler) && x >= LABEL_WIDTH };
  }
  function onMove(event) {
    const [x, y] = localPoint(event);
    cursorX = x >= LABEL_WIDTH ? x : null;
    if (drag && !(event.buttons & 1)) drag = null; // released outside the canvas
    if (drag) {
      const dx = x - drag.x;
      if (Math.abs(dx) > 2) drag.moved = true;
      if (drag.moved) {
        tooltip.hidden = true;
        if (drag.measure) {
          const edge = Math.min(Math.max(x, LABEL_WIDTH), width);
          measure = { t0: timeOf(drag.x), t1: timeOf(edge) };
          drawCursor();
        } else {
          const shift = (dx / plotWidth()) * (drag.view.t1 - drag.view.t0);
          setView(drag.view.t0 - shift, drag.view.t1 - shift);
        }
        return;
      }
    }
    showTooltip(hitAt(x, y), x, y);
    drawCursor();
  }
  function onUp(event) {
    const wasDrag = drag && drag.moved;
    drag = null;
    if (wasDrag) return;
    if (measure) {
      measure = null;
      drawCursor();
    }
    const [x, y] = localPoint(event);
    const hit = hitAt(x, y);
    if (hit && hit.hazard !== undefined) {
      model.set("selected_hazard", hit.hazard);
    } else if (hit) {
      model.set("selected_command", data.columns.id[hit.row]);
    } else {
      model.set("selected_command", null);
    }
    // a click here selects what is already in view: no need to move the view to it
    ownSelection = true;
    try {
      model.save_changes();
    } finally {
      ownSelection = false;
    }
  }
  function onLeave() {
    tooltip.hidden = true;
    drag = null;
    cursorX = null;
    drawCursor();
  }

  canvas.addEventListener("wheel", onWheel, { passive: false });
  canvas.addEventListener("mousedown", onDown);
  canvas.addEventListener("mousemove", onMove);
  canvas.addEventListener("mouseup", onUp);
  canvas.addEventListener("mouseleave", onLeave);
  canvas.addEventListener("dblclick", fit);
  frame.addEventListener("keydown", onKey);

  const onSelection = () => draw();
  const onHazard = () => {
    const index = model.get("selected_hazard");
    if (index !== null && index !== undefined && !ownSelection) showHazard(index);
    draw();
  };
  // A command chosen elsewhere (the table) is brought into view; one chosen as part of a
  // hazard is left to onHazard.
  const onCommand = () => {
    const id = model.get("selected_command");
    const index = model.get("selected_hazard");
    const hazard = index === null || index === undefined ? null : hazards[index];
    if (id === null || id === undefined || ownSelection) return;
    if (hazard && hazard.command_ids.includes(id)) return;
    showCommand(id);
  };
  const onData = () => {
    summary = model.get("summary") || {};
    hazards = model.get("hazards") || [];
    data = decode(summary, model.get("data"), hazards);
    textWidths.clear();
    measure = null;
    view = initialView();
    buildToolbar();
    resize();
    draw();
  };
  model.on("change:selected_commands", onSelection);
  model.on("change:selected_command", onCommand);
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
  // JupyterLab switches theme live: it marks <body> and swaps a stylesheet in <head>,
  // which may apply a moment later. Redraw when the colours the canvas uses changed, now
  // and once more after the new stylesheet had time to load.
  let themeTimer = null;
  const checkTheme = () => {
    if (refreshTheme()) draw();
  };
  const themeWatch = new MutationObserver(() => {
    checkTheme();
    clearTimeout(themeTimer);
    themeTimer = setTimeout(checkTheme, 300);
  });
  const themeAttributes = ["class", "style", "data-jp-theme-name", "data-jp-theme-light"];
  for (const node of [document.documentElement, document.body]) {
    themeWatch.observe(node, { attributes: true, attributeFilter: themeAttributes });
  }
  if (document.head) themeWatch.observe(document.head, { childList: true });

  buildToolbar();
  resize();
  draw();

  return () => {
    observer && observer.disconnect();
    themeWatch.disconnect();
    clearTimeout(themeTimer);
    model.off("change:selected_commands", onSelection);
    model.off("change:selected_command", onCommand);
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
