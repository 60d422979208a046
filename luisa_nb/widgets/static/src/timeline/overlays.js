// What the timeline draws over its lanes: user ranges as brackets, command lists as
// brackets under their bars, one labelled block per command list of a runtime that reports
// no command times (over its commands' bars, which all span the list), event signal ->
// wait arrows, and what the host did between records (kernel compiles, the user's Python)
// as blocks on the host lane. Reads summary.ranges, .lists, .untimed, .links and
// .host_activity (luisa_nb/views/overlays.py); draws nothing it is not given.

import { inkOn } from "./format.js";

const OVERLAY_FONT = "8px sans-serif";
const HOST_RANGE_ROW = 8;
const HOST_RANGE_DEPTHS = 3;

// Range colours by depth (the theme's --lnb-range-1 to -4).
const RANGE_KEYS = ["range1", "range2", "range3", "range4"];

// Draws the overlays of `summary` with `g`, the geometry of this draw (geometry.js);
// returns how many items of each kind it drew.
export function drawOverlays(ctx, summary, g) {
  const theme = g.theme;
  const left = g.LABEL_WIDTH;
  const right = left + g.plotWidth;
  const lanes = (summary.lanes || []).length;
  const counted = { ranges: 0, lists: 0, untimed: 0, links: 0, activity: 0 };
  const laneBottom = (lane) => g.laneTop(lane) + g.laneHeight(lane);
  // [x0, x1] of the times [t0, t1] on screen (at least `least` wide), or null if out of view.
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

  // Host activity: blocks in the row of the host lane's bars (host waits never overlap).
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

  // Lists whose commands' times were not reported: one neutral block, outlined and
  // labelled with what the lane says of its times, instead of bars that look measured.
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

  // Ranges: labelled rows at the top of the host lane for their host interval; on each
  // stream lane, a bracket over the first to the last of their records there.
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

  // Command lists: a bracket under the bars of each list of several commands.
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

  // Event links: an arrow from each signal to the waits on its event.
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
