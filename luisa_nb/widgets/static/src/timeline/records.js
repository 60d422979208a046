// The timeline's records: the packed columns decoded and indexed by lane, the status
// marks, the host reads/writes in time order, and binary searches over them.

import { decodeColumns } from "../shared/columns.js";

// Status marks: a failed (or cancelled) command has a stripe on top, one that never ran
// (skipped, pending) is hatched and outlined.
export const FAILED = 1;
export const NOT_RUN = 2;
export const LATENT = "LATENT_STALE_UPLOAD";
// Aggregated columns keep the most telling kind: transfers over dispatches over syncs.
export const PRIORITY = [9, 9, 6, 5, 7, 2, 3, 3, 2, 1];

export function decodeRecords(summary, data, hazards) {
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
  const statusMark = new Uint8Array(256);
  (summary.statuses || []).forEach((name, code) => {
    if (name === "failed" || name === "cancelled") statusMark[code] = FAILED;
    else if (name === "skipped" || name === "pending") statusMark[code] = NOT_RUN;
  });
  return { count, columns, byLane, maxDuration, hazardIds, statusMark, hostOrder: null };
}

// The rows with a host read or write, by the time of it: {rows, times} (made once).
export function hostOrder(records) {
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

// The rows of the records with ids `ids`.
export function rowsOf(records, ids) {
  const wanted = new Set(ids);
  const rows = [];
  const { columns, count } = records;
  if (!wanted.size) return rows;
  for (let i = 0; i < count; i++) if (wanted.has(columns.id[i])) rows.push(i);
  return rows;
}

// The first time of a sorted array at or after `value` (binary search).
export function firstAtOrAfter(times, value) {
  let lo = 0;
  let hi = times.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (times[mid] < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// The first of `rows` (sorted by start) whose start is at or after `value`.
export function lowerBound(rows, start, value) {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (start[rows[mid]] < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
