// The timeline's toolbar: Fit, zoom and Ruler buttons, the legend of every mark the
// canvas can draw for this trace, and the keys hint.

import { element } from "../shared/dom.js";
import { FAILED, LATENT, NOT_RUN } from "./records.js";

const SVG = "http://www.w3.org/2000/svg";
const HINT = "keys W/S zoom · A/D pan · F fit · Ctrl+wheel zoom · Shift+drag measure";
const KEYS =
  "Ctrl/⌘ + wheel: zoom about the pointer\nShift + wheel: pan\nWith the timeline focused (click it or Tab to it):\n  W / S: zoom in / out\n  A / D: pan left / right\n  F or 0: fit the whole trace\n  Esc: clear the measurement\nShift + drag: measure a span\nDrag: pan · double-click: fit";

function button(toolbar, label, title, action) {
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
function legend({ summary, records, hazards }) {
  const { columns, count, statusMark } = records;
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
  return box;
}

// Fill `toolbar` for `scene` ({summary, records, hazards}); `actions` are the timeline's
// fit(), zoom(factor) and toggleRuler() (which returns whether the ruler is now on).
export function buildToolbar(toolbar, scene, actions) {
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
  hint.title = KEYS;
  toolbar.append(hint);
}
