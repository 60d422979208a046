// Where things sit on the timeline's canvas, in CSS pixels: the axis strip on top, the
// label column on the left, the host lane (lane 0) and a lane per stream below it, and
// the time <-> x mapping of one view over one canvas width.

export const LANE_HEIGHT = 26;
export const HOST_LANE_HEIGHT = 46;
export const AXIS_HEIGHT = 22;
export const LABEL_WIDTH = 120;
// Bars are drawn at least this wide; narrower ones are aggregated per pixel column.
export const MIN_BAR = 3;

export function laneHeight(lane) {
  return lane === 0 ? HOST_LANE_HEIGHT : LANE_HEIGHT;
}

export function laneTop(lane) {
  return lane === 0 ? AXIS_HEIGHT : AXIS_HEIGHT + HOST_LANE_HEIGHT + (lane - 1) * LANE_HEIGHT;
}

export function lanesHeight(laneCount) {
  return AXIS_HEIGHT + HOST_LANE_HEIGHT + (laneCount - 1) * LANE_HEIGHT + 4;
}

// The lane at height y, or -1 (the axis strip, or below the last lane).
export function laneAt(y, laneCount) {
  if (y < AXIS_HEIGHT) return -1;
  if (y < AXIS_HEIGHT + HOST_LANE_HEIGHT) return 0;
  const lane = 1 + Math.floor((y - AXIS_HEIGHT - HOST_LANE_HEIGHT) / LANE_HEIGHT);
  return lane < laneCount ? lane : -1;
}

// [top, height] of the bars of `lane`. Bars of stream lanes fill the lane; on the host
// lane, bars (host waits) sit at the bottom, markers above them, and hazard arcs in the
// top half.
export function barBox(lane) {
  const top = laneTop(lane);
  if (lane === 0) return [top + HOST_LANE_HEIGHT - 12, 9];
  return [top + 4, LANE_HEIGHT - 8];
}

// The height of the host read/write markers.
export function markerY() {
  return AXIS_HEIGHT + HOST_LANE_HEIGHT - 20;
}

export function plotWidthOf(width) {
  return Math.max(width - LABEL_WIDTH, 10);
}

// The geometry of `view` ({t0, t1} in µs) drawn `width` pixels wide over `lanes` with
// `theme`'s colours: what the painters, hit-testing and overlays.js share, and what the
// timeline's test hook geometry() returns.
export function geometry(view, width, lanes, theme) {
  const { t0, t1 } = view;
  const plotWidth = plotWidthOf(width);
  return {
    xOf: (t) => LABEL_WIDTH + ((t - t0) / (t1 - t0)) * plotWidth,
    timeOf: (x) => t0 + ((x - LABEL_WIDTH) / plotWidth) * (t1 - t0),
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
    theme: { ...theme },
  };
}
