// Timeline of a luisa_nb trace: a host lane and one lane per stream, each record a bar
// coloured by kind, host reads/writes as markers on the host lane, hazards as arrows.
// The widget module's default export renders it; the static page renders it with a
// stand-in model.
//
// Model keys read: summary (JSON: layout, lanes, kinds, texts, meta), hazard_layout and
// hazard_data (packed; a static page: hazards, JSON),
// data (the packed columns, bytes), selected_command, selected_hazard, selected_commands.
// Keys written (on click): selected_command, selected_hazard.
//
// Every colour but the kinds' comes from the --lnb-* properties of widgets.css, read on
// each draw, so the canvas follows JupyterLab's light and dark themes (and a live switch).
// The view opens on the first hazard; Fit shows the whole trace. Input: controls.js.

import { modelHazards } from "../shared/columns.js";
import { element } from "../shared/dom.js";
import { readTheme } from "../shared/theme.js";
import { widget } from "../shared/widget.js";
import { drawAxis, drawCursor } from "./axis.js";
import { drawLanes } from "./bars.js";
import { attachControls } from "./controls.js";
import { inkOn } from "./format.js";
import { LABEL_WIDTH, geometry, lanesHeight } from "./geometry.js";
import { arrowPoint, hitAt } from "./hit.js";
import { drawHazards, drawMarkers, drawSelection, rectOfRow } from "./marks.js";
import { drawOverlays } from "./overlays.js";
import { decodeRecords, rowsOf } from "./records.js";
import { buildToolbar } from "./toolbar.js";
import { showTooltip } from "./tooltip.js";
import {
  clampView,
  commandView,
  extent,
  fullView,
  hazardView,
  initialView,
  pannedView,
  zoomedView,
} from "./view.js";

// The kinds of commands (the others are sync points).
const COMMAND_KINDS = new Set(["upload", "download", "copy", "fill", "dispatch"]);

// The page's registry of timelines (the test hooks).
function registry() {
  const root = (globalThis.__luisa_nb = globalThis.__luisa_nb || {});
  root.timelines = root.timelines || [];
  return root;
}

// One timeline on the page: its elements, the model's data decoded, the view, and what
// the last draw left for hit-testing; it draws, and moves the view.
class Timeline {
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
    // the pointer's time line and the measured span, redrawn alone as the pointer moves
    this.cursorLayer = element("canvas", "lnb-timeline-cursor");
    this.cursorLayer.style.cssText = "position:absolute;left:0;top:0;pointer-events:none";
    this.tooltip = element("div", "lnb-tooltip");
    this.tooltip.hidden = true;
    this.frame.append(this.canvas, this.cursorLayer, this.tooltip);
    this.root.append(this.toolbar, this.frame);
    el.replaceChildren(this.root);

    this.width = 0;
    this.theme = {};
    this.patterns = new Map();
    this.textWidths = new Map();
    this.hazardPaths = [];
    this.pointer = { x: null, measure: null, drag: null, ruler: false };
    // set while this timeline saves a click's selection: no need to move the view to it
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
      toggleRuler: () => (this.pointer.ruler = !this.pointer.ruler),
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
      labels: String(counts.labels),
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
    const anchor = g.timeOf(x === undefined || x === null ? LABEL_WIDTH + g.plotWidth / 2 : x);
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
    if (hit && hit.hazard !== undefined) model.set("selected_hazard", hit.hazard);
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
    const ids = Array.from(id)
      .filter((_, row) => COMMAND_KINDS.has((kinds[kind[row]] || {}).name))
      .sort((a, b) => a - b);
    const current = this.model.get("selected_command");
    const next = direction > 0 ? ids.find((k) => current == null || k > current) : ids.findLast((k) => current == null || k < current);
    if (next === undefined) return;
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
      hit: (x, y) => this.hit(x, y),
    };
  }
}

// JupyterLab switches theme live: it marks <body> and swaps a stylesheet in <head>,
// which may apply a moment later. Redraw when the colours the canvas uses changed, now
// and once more after the new stylesheet had time to load. Returns the cleanup.
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

// Redraw at the frame's new width when it changes. Returns the cleanup.
function watchSize(timeline) {
  if (typeof ResizeObserver === "undefined") return () => {};
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
    if (index !== null && index !== undefined && !timeline.ownSelection) timeline.showHazard(index);
    timeline.draw();
  };
  // A command chosen elsewhere (the table) is brought into view; one chosen as part of a
  // hazard is left to onHazard.
  const onCommand = () => {
    const id = model.get("selected_command");
    const index = model.get("selected_hazard");
    const hazard = index === null || index === undefined ? null : timeline.hazards[index];
    if (id === null || id === undefined || timeline.ownSelection) return;
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
    "change:findings": onData,
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

export default widget(render);
