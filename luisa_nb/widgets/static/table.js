// Command table of a luisa_nb trace: every record in issue (id) order, virtually
// scrolled so 100,000 rows cost only the rows in view. Click a row to select it.
// anywidget renderer: export render({model, el}).
//
// Model keys read: summary, data (the packed columns, as for the timeline), hazards,
// selected_command, selected_commands. Key written: selected_command.

const ROW_HEIGHT = 22;
const OVERSCAN = 8;
const HEADERS = ["id", "kind", "lane", "start", "took", "host read / write", "status", "what"];

function decode(summary, data, hazards) {
  const { count, columns } = decodeColumns(summary, data);
  const order = new Uint32Array(count);
  for (let i = 0; i < count; i++) order[i] = i;
  order.sort((a, b) => columns.id[a] - columns.id[b]);
  const position = new Map();
  const hazardIds = new Set();
  for (const hazard of hazards || []) for (const id of hazard.command_ids) hazardIds.add(id);
  return { count, columns, order, position, hazardIds };
}

function formatTime(us) {
  const scale = Math.abs(us);
  if (scale >= 1e6) return `${(us / 1e6).toFixed(3)} s`;
  if (scale >= 1e3) return `${(us / 1e3).toFixed(3)} ms`;
  return `${us.toFixed(scale >= 100 ? 1 : 2)} µs`;
}

export function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "lnb-table";
  const header = document.createElement("div");
  header.className = "lnb-table-row lnb-table-header";
  for (const name of HEADERS) {
    const cell = document.createElement("span");
    cell.textContent = name;
    header.append(cell);
  }
  const scroller = document.createElement("div");
  scroller.className = "lnb-table-scroll";
  const spacer = document.createElement("div");
  spacer.className = "lnb-table-spacer";
  const body = document.createElement("div");
  body.className = "lnb-table-body";
  spacer.append(body);
  scroller.append(spacer);
  const inner = document.createElement("div");
  inner.className = "lnb-table-inner";
  inner.append(header, scroller);
  root.append(inner);
  el.replaceChildren(root);

  let summary = model.get("summary") || {};
  let data = decode(summary, model.get("data"), model.get("hazards"));
  let first = -1;
  let last = -1;

  function positionOf(id) {
    if (data.position.has(id)) return data.position.get(id);
    const { order, columns } = data;
    let lo = 0;
    let hi = order.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const value = columns.id[order[mid]];
      if (value === id) {
        data.position.set(id, mid);
        return mid;
      }
      if (value < id) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  function rowElement(position, selected) {
    const { columns, order } = data;
    const row = order[position];
    const id = columns.id[row];
    const kind = summary.kinds[columns.kind[row]];
    const status = summary.statuses[columns.status[row]];
    const line = document.createElement("div");
    line.className = "lnb-table-row";
    if (selected.has(id)) line.classList.add("lnb-selected");
    if (data.hazardIds.has(id)) line.classList.add("lnb-hazard-row");
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
      summary.texts[columns.text[row]],
    ];
    cells.forEach((text, k) => {
      const cell = document.createElement("span");
      if (k === 1) {
        const dot = document.createElement("i");
        dot.style.background = kind.color;
        cell.append(dot);
      }
      cell.append(document.createTextNode(text));
      line.append(cell);
    });
    return line;
  }

  function paint(force) {
    const top = scroller.scrollTop;
    const height = scroller.clientHeight || 240;
    const from = Math.max(0, Math.floor(top / ROW_HEIGHT) - OVERSCAN);
    const to = Math.min(data.count, Math.ceil((top + height) / ROW_HEIGHT) + OVERSCAN);
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
    if (id === null || id === undefined) return;
    const position = positionOf(id);
    if (position < 0) return;
    const top = position * ROW_HEIGHT;
    const height = scroller.clientHeight || 240;
    if (top < scroller.scrollTop || top + ROW_HEIGHT > scroller.scrollTop + height) {
      scroller.scrollTop = Math.max(0, top - height / 3);
    }
  }

  function setUp() {
    spacer.style.height = `${data.count * ROW_HEIGHT}px`;
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
  const onSelection = () => {
    reveal();
    paint(true);
  };
  const onData = () => {
    summary = model.get("summary") || {};
    data = decode(summary, model.get("data"), model.get("hazards"));
    setUp();
  };
  scroller.addEventListener("scroll", onScroll);
  body.addEventListener("click", onClick);
  model.on("change:selected_commands", onSelection);
  model.on("change:selected_command", onSelection);
  model.on("change:data", onData);
  model.on("change:summary", onData);
  setUp();
  requestAnimationFrame(() => paint(true));

  return () => {
    model.off("change:selected_commands", onSelection);
    model.off("change:selected_command", onSelection);
    model.off("change:data", onData);
    model.off("change:summary", onData);
  };
}

export default { render };
