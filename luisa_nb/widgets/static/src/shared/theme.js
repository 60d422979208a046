// The theme colours of widgets.css (its --lnb-* properties), read where a renderer
// draws on a canvas. The stylesheet is on every page a renderer runs in (a live widget's
// _css, the static page's <style>), so it is their one source: a renderer not yet in
// the document (anywidget may render into a detached element) reads them off a hidden
// probe of the same class.

// The colours a canvas uses, by key: "fgMuted" is --lnb-fg-muted.
const KEYS = [
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
  "compile",
];

function propertyOf(key) {
  return `--lnb-${key.replace(/[A-Z]|\d+/g, (c) => `-${c}`).toLowerCase()}`;
}

// The --lnb-* colours in effect on `element`, by key.
export function readTheme(element) {
  let probe = null;
  if (!element.isConnected && document.body) {
    probe = document.createElement("div");
    probe.className = element.className;
    probe.hidden = true;
    document.body.append(probe);
  }
  const style = getComputedStyle(probe || element);
  const theme = {};
  for (const key of KEYS) theme[key] = style.getPropertyValue(propertyOf(key)).trim();
  if (probe) probe.remove();
  return theme;
}

// A CSS colour as [r, g, b] (a canvas turns any CSS colour into #rrggbb or rgba()).
export function rgbOf(color) {
  const context = document.createElement("canvas").getContext("2d");
  context.fillStyle = color;
  const style = context.fillStyle;
  if (style.startsWith("#")) return [1, 3, 5].map((k) => parseInt(style.slice(k, k + 2), 16));
  return /rgba?\(([^)]*)\)/.exec(style)[1].split(",").slice(0, 3).map(Number);
}
