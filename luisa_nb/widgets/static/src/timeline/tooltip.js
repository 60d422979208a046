// The tooltip: what the pointer is on, as lines of text nodes and elements (names
// always as text).

import { element } from "../shared/dom.js";
import { formatTime } from "./format.js";
import { NOT_RUN } from "./records.js";

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

// Show in `tooltip` what `hit` (from hitAt) is, near (x, y) and inside a canvas `width`
// pixels wide; hide it for no hit.
export function showTooltip(tooltip, scene, hit, x, y, width) {
  if (!hit) {
    tooltip.hidden = true;
    return;
  }
  const lines =
    hit.hazard !== undefined
      ? hazardLines(scene.hazards[hit.hazard])
      : recordLines(scene.summary, scene.records, hit.row, hit.marker);
  tooltip.replaceChildren(...lines.flatMap((parts, i) => (i ? [element("br"), ...parts] : parts)));
  tooltip.hidden = false;
  const left = Math.min(x + 14, Math.max(width - 380, 0));
  tooltip.style.left = `${left}px`;
  tooltip.style.top = `${y + 16}px`;
}
