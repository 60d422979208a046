// Generated from luisa_nb/widgets/static/src by js/build.mjs (esbuild); do not edit.

// luisa_nb/widgets/static/src/shared/columns.js
var TYPES = {
  i1: Int8Array,
  u1: Uint8Array,
  i2: Int16Array,
  u2: Uint16Array,
  i4: Int32Array,
  u4: Uint32Array,
  i8: BigInt64Array,
  u8: BigUint64Array,
  f4: Float32Array,
  f8: Float64Array
};
function toArrayBuffer(value) {
  if (!value) return new ArrayBuffer(0);
  if (value instanceof ArrayBuffer) return value;
  if (ArrayBuffer.isView(value)) {
    return value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength);
  }
  return new ArrayBuffer(0);
}
function decodeColumns(summary, data) {
  const buffer = toArrayBuffer(data);
  const count = summary.count || 0;
  const columns = {};
  for (const [name, spec] of Object.entries(summary.layout || {})) {
    columns[name] = new TYPES[spec.dtype](buffer, spec.offset, count);
  }
  return { count, columns };
}
function decodeHazards(layout, data) {
  const buffer = toArrayBuffer(data);
  const count = layout.count || 0;
  const column = {};
  for (const [name, spec] of Object.entries(layout.columns || {})) {
    column[name] = new TYPES[spec.dtype](buffer, spec.offset, spec.length);
  }
  const end = (side, index) => ({
    lane: column[`${side}_lane`][index],
    time: column[`${side}_time`][index],
    command: column[`${side}_command`][index],
    label: layout.labels[column[`${side}_label`][index]]
  });
  const hazards = new Array(count);
  for (let index = 0; index < count; index++) {
    const first = column.ids_from[index];
    const group = column.group[index];
    const upload = column.upload[index];
    hazards[index] = {
      index,
      group: group < 0 ? null : group,
      kind: layout.kinds[column.kind[index]],
      command_ids: Array.from(column.ids.subarray(first, first + column.ids_count[index])),
      upload: upload < 0 ? null : upload,
      arrow: column.arrow[index] ? { from: end("from", index), to: end("to", index) } : null
    };
  }
  return hazards;
}
var decodedHazards = /* @__PURE__ */ new WeakMap();
function modelHazards(model) {
  const layout = model.get("hazard_layout");
  const data = model.get("hazard_data");
  if (!layout || layout.count === void 0 || !data || typeof data !== "object") {
    return model.get("hazards") || [];
  }
  if (!decodedHazards.has(data)) decodedHazards.set(data, decodeHazards(layout, data));
  return decodedHazards.get(data);
}

// luisa_nb/widgets/static/src/shared/dom.js
function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== void 0) node.textContent = text;
  return node;
}

// luisa_nb/widgets/static/src/shared/widget.js
function hideStaticTwins(model) {
  const registry = globalThis.__luisa_nb = globalThis.__luisa_nb || {};
  registry.live = registry.live || /* @__PURE__ */ new Set();
  for (const id of model.get("_twin_ids") || []) {
    registry.live.add(id);
    const key = `lnb-twin-hidden-${id}`;
    if (document.getElementById(key)) continue;
    const style = document.createElement("style");
    style.id = key;
    style.textContent = `.lnb-twin[data-lnb-twin~="${id}"] { display: none !important; }`;
    document.head.append(style);
  }
}
function widget(render2) {
  return {
    render(props) {
      hideStaticTwins(props.model);
      return render2(props);
    }
  };
}

// luisa_nb/widgets/static/src/table.js
var ROW_HEIGHT = 22;
var OVERSCAN = 8;
var FILTER_DELAY_MS = 120;
var HEADERS = ["id", "kind", "lane", "start", "took", "host read/write", "status", "range", "what"];
var GRID = "84px 100px 64px 80px 68px 118px 52px 86px minmax(120px, 1fr)";
function decode(summary, data, hazards) {
  const { count, columns } = decodeColumns(summary, data);
  const order = new Uint32Array(count);
  for (let i = 0; i < count; i++) order[i] = i;
  order.sort((a, b) => columns.id[a] - columns.id[b]);
  const position = /* @__PURE__ */ new Map();
  const hazardsOf = /* @__PURE__ */ new Map();
  (hazards || []).forEach((hazard, index) => {
    for (const id of hazard.command_ids) {
      if (!hazardsOf.has(id)) hazardsOf.set(id, []);
      hazardsOf.get(id).push(index);
    }
  });
  return { count, columns, order, position, hazardsOf, shown: order };
}
function formatTime(us) {
  const scale = Math.abs(us);
  if (scale >= 1e6) return `${(us / 1e6).toFixed(3)} s`;
  if (scale >= 1e3) return `${(us / 1e3).toFixed(3)} ms`;
  return `${us.toFixed(scale >= 100 ? 1 : 2)} µs`;
}
function rangeName(summary, index) {
  const ranges = summary.ranges || [];
  return index >= 0 && index < ranges.length ? ranges[index].name : "";
}
function rangePath(summary, index) {
  const ranges = summary.ranges || [];
  const names = [];
  for (let k = index; k >= 0 && k < ranges.length && names.length < 32; k = ranges[k].parent ?? -1) {
    names.unshift(ranges[k].name);
  }
  return names.join(" › ");
}
function findId(rows, columns, id) {
  let lo = 0;
  let hi = rows.length - 1;
  while (lo <= hi) {
    const mid = lo + hi >> 1;
    const value = columns.id[rows[mid]];
    if (value === id) return mid;
    if (value < id) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}
function render({ model, el }) {
  const root = element("div", "lnb-table");
  const bar = element("div", "lnb-table-bar");
  bar.style.cssText = "display:flex;gap:8px;align-items:center;padding:4px;";
  const search = element("input", "lnb-table-search");
  search.type = "search";
  search.placeholder = "filter: text, kind, range or #id";
  search.setAttribute("aria-label", "filter the commands");
  search.style.cssText = "flex:1;max-width:320px;font:inherit;padding:2px 4px;";
  const tally = element("span", "lnb-table-count");
  tally.style.cssText = "color:var(--lnb-fg-muted);font-size:12px;";
  bar.append(search, tally);
  const header = element("div", "lnb-table-row lnb-table-header");
  header.style.gridTemplateColumns = GRID;
  for (const name of HEADERS) header.append(element("span", "", name));
  const scroller = element("div", "lnb-table-scroll");
  const spacer = element("div", "lnb-table-spacer");
  const body = element("div", "lnb-table-body");
  spacer.append(body);
  scroller.append(spacer);
  const inner = element("div", "lnb-table-inner");
  inner.append(header, scroller);
  const details = element("div", "lnb-table-details");
  details.style.cssText = "border-top:1px solid var(--lnb-border);padding:6px 8px;font-size:12px;max-height:220px;overflow:auto;";
  root.append(bar, inner, details);
  el.replaceChildren(root);
  let summary = model.get("summary") || {};
  let hazards = modelHazards(model);
  let data = decode(summary, model.get("data"), hazards);
  let first = -1;
  let last = -1;
  let query = "";
  let timer = null;
  function positionOf(id) {
    if (!data.position.has(id)) data.position.set(id, findId(data.shown, data.columns, id));
    return data.position.get(id);
  }
  function rowOf(id) {
    const position = findId(data.order, data.columns, id);
    return position < 0 ? -1 : data.order[position];
  }
  function applyFilter(text) {
    query = text.trim().toLowerCase();
    const { columns, order, count } = data;
    const exact = /^#\d+$/.test(query) ? Number(query.slice(1)) : null;
    if (!query) {
      data.shown = order;
    } else if (exact !== null) {
      const position = findId(order, columns, exact);
      data.shown = position < 0 ? new Uint32Array(0) : order.subarray(position, position + 1);
    } else {
      const holds = (value) => value.toLowerCase().includes(query);
      const textHit = (summary.texts || []).map(holds);
      const kindHit = (summary.kinds || []).map((kind) => holds(kind.name));
      const rangeHit = [];
      for (const range of summary.ranges || []) {
        const parent = range.parent ?? -1;
        rangeHit.push(holds(range.name) || parent >= 0 && rangeHit[parent]);
      }
      const kept = new Uint32Array(count);
      let n = 0;
      for (let p = 0; p < count; p++) {
        const row = order[p];
        const range = columns.range ? columns.range[row] : -1;
        if (textHit[columns.text[row]] || kindHit[columns.kind[row]] || range >= 0 && rangeHit[range] || `#${columns.id[row]}`.includes(query)) {
          kept[n++] = row;
        }
      }
      data.shown = kept.subarray(0, n);
    }
    data.position = /* @__PURE__ */ new Map();
    tally.textContent = `${data.shown.length.toLocaleString("en-US")} of ${count.toLocaleString("en-US")}`;
    root.dataset.shown = String(data.shown.length);
    root.dataset.filter = query;
    setUp();
  }
  function rowElement(position, selected) {
    const { columns, shown } = data;
    const row = shown[position];
    const id = columns.id[row];
    const kind = summary.kinds[columns.kind[row]];
    const status = summary.statuses[columns.status[row]];
    const line = element("div", "lnb-table-row");
    line.style.gridTemplateColumns = GRID;
    if (selected.has(id)) line.classList.add("lnb-selected");
    if (data.hazardsOf.has(id)) line.classList.add("lnb-hazard-row");
    if (status === "failed" || status === "skipped") line.classList.add("lnb-failed");
    line.dataset.id = String(id);
    line.style.top = `${position * ROW_HEIGHT}px`;
    const host = columns.host[row];
    let hostText = "";
    if (!Number.isNaN(host)) {
      hostText = `${kind.name === "upload" ? "read" : "write"} ${formatTime(columns.start[row] + host)}`;
    }
    const cells = [
      `#${id}`,
      kind.name,
      summary.lanes[columns.lane[row]].name,
      formatTime(columns.start[row]),
      formatTime(columns.duration[row]),
      hostText,
      status,
      rangeName(summary, columns.range ? columns.range[row] : -1),
      summary.texts[columns.text[row]]
    ];
    cells.forEach((text, k) => {
      const cell = element("span");
      if (k === 1) {
        const dot = element("i");
        dot.style.background = kind.color;
        cell.append(dot);
      }
      if (k === 7) cell.className = "lnb-table-range";
      cell.append(document.createTextNode(text));
      line.append(cell);
    });
    return line;
  }
  function fieldsOf(id) {
    const row = rowOf(id);
    if (row < 0) return null;
    const { columns } = data;
    const kind = summary.kinds[columns.kind[row]].name;
    const lane = summary.lanes[columns.lane[row]];
    const start = columns.start[row];
    const end = start + columns.duration[row];
    const fields = [
      ["record", `#${id} ${summary.texts[columns.text[row]]}`],
      ["kind", kind],
      ["stream", lane.stream === null ? "host" : `${lane.name} (stream ${lane.stream})`]
    ];
    const submission = columns.submission ? columns.submission[row] : 0;
    if (submission) fields.push(["submission", `command list ${submission}`]);
    if (columns.enqueued && !Number.isNaN(columns.enqueued[row])) {
      const when = start + columns.enqueued[row];
      fields.push([submission ? "enqueued" : "issued", formatTime(when)]);
    }
    fields.push(["start", formatTime(start)], ["end", formatTime(end)]);
    fields.push(["took", formatTime(columns.duration[row])]);
    const host = columns.host[row];
    if (!Number.isNaN(host)) {
      fields.push([kind === "upload" ? "host read" : "host write", formatTime(start + host)]);
    }
    let detail = columns.detail ? (summary.details || [])[columns.detail[row]] : "";
    const sent = model.get("record_details");
    if (!detail && sent && sent.id === id) detail = sent.lines;
    for (const line of (detail || "").split("\n")) {
      if (!line) continue;
      fields.push(line.startsWith("host ") ? ["host range", line.slice(5)] : ["device range", line]);
    }
    fields.push(["status", summary.statuses[columns.status[row]]]);
    const error = (summary.errors || {})[String(id)];
    if (error) fields.push(["error", error]);
    const range = columns.range ? columns.range[row] : -1;
    fields.push(["range", range >= 0 ? rangePath(summary, range) : "none"]);
    const member = data.hazardsOf.get(id) || [];
    fields.push([
      "hazards",
      member.length ? member.map((index) => `${index + 1}: ${hazards[index].kind}`).join(", ") : "none"
    ]);
    return fields;
  }
  function showDetails() {
    const id = model.get("selected_command");
    const fields = id === null || id === void 0 ? null : fieldsOf(id);
    details.dataset.id = fields ? String(id) : "";
    if (!fields) {
      details.replaceChildren(element("span", "lnb-note", "Select a row to see its record."));
      return;
    }
    const list = element("dl");
    list.style.cssText = "display:grid;grid-template-columns:110px 1fr;gap:1px 8px;margin:0;";
    for (const [name, value] of fields) {
      const term = element("dt", "", name);
      term.style.cssText = "color:var(--lnb-fg-muted);";
      const text = element("dd", "", value);
      text.style.cssText = "margin:0;white-space:pre-wrap;word-break:break-word;";
      text.dataset.field = name;
      list.append(term, text);
    }
    details.replaceChildren(list);
  }
  function paint(force) {
    const top = scroller.scrollTop;
    const height = scroller.clientHeight || 240;
    const total = data.shown.length;
    const from = Math.max(0, Math.floor(top / ROW_HEIGHT) - OVERSCAN);
    const to = Math.min(total, Math.ceil((top + height) / ROW_HEIGHT) + OVERSCAN);
    if (!force && from === first && to === last) return;
    first = from;
    last = to;
    const selected = new Set(model.get("selected_commands") || []);
    const rows = [];
    for (let p = from; p < to; p++) rows.push(rowElement(p, selected));
    body.replaceChildren(...rows);
    root.dataset.rows = String(data.count);
    root.dataset.rendered = String(rows.length);
  }
  function reveal() {
    const id = model.get("selected_command");
    if (id === null || id === void 0) return;
    const position = positionOf(id);
    if (position < 0) return;
    const top = position * ROW_HEIGHT;
    const height = scroller.clientHeight || 240;
    if (top < scroller.scrollTop || top + ROW_HEIGHT > scroller.scrollTop + height) {
      scroller.scrollTop = Math.max(0, top - height / 3);
    }
  }
  function setUp() {
    spacer.style.height = `${data.shown.length * ROW_HEIGHT}px`;
    first = last = -1;
    paint(true);
  }
  const onScroll = () => paint(false);
  const onClick = (event) => {
    const line = event.target.closest(".lnb-table-row");
    if (!line || !line.dataset.id) return;
    model.set("selected_command", Number(line.dataset.id));
    model.save_changes();
  };
  const onInput = () => {
    clearTimeout(timer);
    timer = setTimeout(() => applyFilter(search.value), FILTER_DELAY_MS);
  };
  const onSelection = () => {
    reveal();
    paint(true);
    showDetails();
  };
  const onData = () => {
    summary = model.get("summary") || {};
    hazards = modelHazards(model);
    data = decode(summary, model.get("data"), hazards);
    applyFilter(search.value);
    showDetails();
  };
  scroller.addEventListener("scroll", onScroll);
  body.addEventListener("click", onClick);
  search.addEventListener("input", onInput);
  model.on("change:selected_commands", onSelection);
  model.on("change:selected_command", onSelection);
  model.on("change:record_details", showDetails);
  model.on("change:data", onData);
  model.on("change:summary", onData);
  applyFilter("");
  showDetails();
  requestAnimationFrame(() => paint(true));
  return () => {
    clearTimeout(timer);
    model.off("change:selected_commands", onSelection);
    model.off("change:selected_command", onSelection);
    model.off("change:record_details", showDetails);
    model.off("change:data", onData);
    model.off("change:summary", onData);
  };
}
var table_default = widget(render);
export {
  table_default as default
};
