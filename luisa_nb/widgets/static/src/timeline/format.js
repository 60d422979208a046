// Text on the timeline: its font, times in the unit their size calls for, the axis's
// ticks, labels fitted to a bar, and the ink that reads on a bar's colour.

export const FONT = "11px sans-serif";

// The theme's dark or light ink, whichever contrasts more with the "#rrggbb" colour
// `color` (the dark one for any other notation).
export function inkOn(color, theme) {
  if (!/^#[0-9a-f]{6}$/i.test(color)) return theme.inkDark;
  const channel = (i) => {
    const c = parseInt(color.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
  };
  const luminance = 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
  return (luminance + 0.05) / 0.0556 >= 1.05 / (luminance + 0.05) ? theme.inkDark : theme.inkLight;
}

// `text` cut to fit `room` pixels in the context's font, with an ellipsis; "" if nothing
// fits. `widths` caches the full widths.
export function fitText(ctx, text, room, widths) {
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

// With `step` so small that an absolute label would need many decimals, ticks show an
// offset from a round base time (returned); else null.
export function axisBase(first, step) {
  const size = Math.abs(first);
  const scale = size >= 1e6 ? 1e6 : size >= 1e3 ? 1e3 : 1;
  if (step / scale >= 1e-4) return null;
  const unit = step * 1000;
  return Math.floor(first / unit) * unit;
}

// A time in the unit its size calls for; `step` (the axis tick) sets the decimals.
export function formatTime(us, step) {
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

// The axis's tick times (every `step` µs) in `view`, with that step as `.step`.
export function ticks(view, plotWidth) {
  const step = niceStep(view.t1 - view.t0, plotWidth);
  const first = Math.ceil(view.t0 / step);
  const times = [];
  for (let k = first; k * step <= view.t1 && times.length < 1000; k++) times.push(k * step);
  times.step = step;
  return times;
}
