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

// luisa_nb/widgets/static/src/shared/dom.js
function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== void 0) node.textContent = text;
  return node;
}

// luisa_nb/widgets/static/src/shared/theme.js
var KEYS = [
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
  "compile"
];
function propertyOf(key) {
  return `--lnb-${key.replace(/[A-Z]|\d+/g, (c) => `-${c}`).toLowerCase()}`;
}
function readTheme(element2) {
  let probe = null;
  if (!element2.isConnected && document.body) {
    probe = document.createElement("div");
    probe.className = element2.className;
    probe.hidden = true;
    document.body.append(probe);
  }
  const style = getComputedStyle(probe || element2);
  const theme = {};
  for (const key of KEYS) theme[key] = style.getPropertyValue(propertyOf(key)).trim();
  if (probe) probe.remove();
  return theme;
}
function rgbOf(color) {
  const context = document.createElement("canvas").getContext("2d");
  context.fillStyle = color;
  const style = context.fillStyle;
  if (style.startsWith("#")) return [1, 3, 5].map((k) => parseInt(style.slice(k, k + 2), 16));
  return /rgba?\(([^)]*)\)/.exec(style)[1].split(",").slice(0, 3).map(Number);
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
function widget(render3) {
  return {
    render(props) {
      hideStaticTwins(props.model);
      return render3(props);
    }
  };
}

// luisa_nb/widgets/static/src/diff.js
function typed(value, dtype) {
  const buffer = value ? toArrayBuffer(value) : null;
  if (!buffer) return null;
  const Type = TYPES[dtype];
  return new Type(buffer, 0, Math.floor(buffer.byteLength / Type.BYTES_PER_ELEMENT));
}
function formatFloat(value, single) {
  if (Number.isNaN(value)) return "nan";
  if (value === Infinity) return "inf";
  if (value === -Infinity) return "-inf";
  let text = String(value);
  if (single) {
    for (let digits = 1; digits <= 9; digits++) {
      const candidate = value.toPrecision(digits);
      if (Math.fround(Number(candidate)) === value) {
        text = String(Number(candidate));
        break;
      }
    }
  }
  if (!/[.e]/.test(text)) text += ".0";
  return text;
}
function formatValue(value, dtype, name) {
  if (name === "bool") return value ? "True" : "False";
  if (typeof value === "bigint") return value.toString();
  if (dtype === "f4") return formatFloat(value, true);
  if (dtype === "f8") return formatFloat(value, false);
  return String(value);
}
function formatNumber(value) {
  if (typeof value === "string") return value;
  if (value === null || value === void 0) return "—";
  if (value !== 0 && (Math.abs(value) >= 1e6 || Math.abs(value) < 1e-4)) return value.toExponential(4);
  return String(Number(value.toPrecision(7)));
}
function difference(a, b) {
  if (typeof a === "bigint" || typeof b === "bigint") return (BigInt(b) - BigInt(a)).toString();
  const d = b - a;
  if (Number.isNaN(d)) return "nan";
  if (!Number.isFinite(d)) return d > 0 ? "inf" : "-inf";
  return formatNumber(d);
}
function unravel(flat, shape, pixel) {
  if (shape.length <= 1) return String(flat);
  const out = [];
  let rest = flat;
  for (let k = shape.length - 1; k >= 0; k--) {
    out.unshift(rest % shape[k]);
    rest = Math.floor(rest / shape[k]);
  }
  if (pixel) [out[0], out[1]] = [out[1], out[0]];
  return `(${out.join(", ")})`;
}
function render({ model, el }) {
  const root = element("div", "lnb-diff");
  el.replaceChildren(root);
  let summary = {};
  let mode = "all";
  let page = 0;
  let pending = 0;
  let focus = null;
  let table = null;
  let pager = null;
  function embedded() {
    return model.get("all_expected") !== void 0 && model.get("all_expected") !== null;
  }
  function localPage(wanted, number) {
    const [te, ta] = summary.transport;
    const size = summary.page_size;
    const start = number * size;
    let indices;
    let expected;
    let actual;
    if (wanted === "all") {
      const e = typed(model.get("all_expected"), te);
      const a = typed(model.get("all_actual"), ta);
      const stop = Math.min(start + size, e.length);
      indices = new Float64Array(Math.max(stop - start, 0)).map((_, k) => start + k);
      expected = e.subarray(start, Math.max(stop, start));
      actual = a.subarray(start, Math.max(stop, start));
    } else {
      const all = typed(model.get("diff_indices"), "f8");
      const stop = Math.min(start + size, all.length);
      indices = all.subarray(start, Math.max(stop, start));
      expected = typed(model.get("diff_expected"), te).subarray(start, Math.max(stop, start));
      actual = typed(model.get("diff_actual"), ta).subarray(start, Math.max(stop, start));
    }
    const message = { type: "page", mode: wanted, page: number, pages: summary.pages[wanted], count: indices.length };
    if (!indices.length && (wanted === "all" ? summary.size : summary.count)) {
      message.missing = "this page is not embedded in the static page; open the trace in a notebook to see it";
    }
    return { message, indices, expected, actual };
  }
  function request(wanted, number) {
    mode = wanted;
    page = number;
    pending += 1;
    if (embedded()) {
      showPage(localPage(wanted, number));
    } else {
      model.send({ type: "page", mode: wanted, page: number, request: pending });
    }
  }
  function onMessage(message, buffers) {
    if (!message || message.request !== pending) return;
    if (message.type === "error") {
      table.replaceChildren(element("p", "lnb-bad", message.message));
      return;
    }
    if (message.type !== "page") return;
    const [te, ta] = summary.transport;
    showPage({
      message,
      indices: typed(buffers[0], "f8"),
      expected: typed(buffers[1], te),
      actual: typed(buffers[2], ta)
    });
  }
  function showPage({ message, indices, expected, actual }) {
    const [te, ta] = summary.transport;
    const [ne, na] = summary.dtypes;
    root.dataset.page = String(message.page);
    root.dataset.mode = message.mode;
    pager.label.textContent = `page ${message.page + 1} of ${message.pages}`;
    pager.previous.disabled = message.page <= 0;
    pager.next.disabled = message.page >= message.pages - 1;
    pager.mode.value = message.mode;
    const rows = [];
    const head = element("tr");
    const indexName = summary.index_name || "index";
    for (const text of [indexName, summary.names[0], summary.names[1], "difference"]) head.append(element("th", "", text));
    for (let k = 0; k < indices.length; k++) {
      const flat = indices[k];
      const e = expected[k];
      const a = actual[k];
      const row = element("tr");
      row.dataset.index = String(flat);
      const same = typeof e === "bigint" || typeof a === "bigint" ? BigInt(e) === BigInt(a) : e === a || Number.isNaN(e) && Number.isNaN(a);
      if (!same) row.classList.add("lnb-differs");
      if (flat === focus) row.classList.add("lnb-focus");
      row.append(
        element("td", "lnb-index", unravel(flat, summary.shape, indexName !== "index")),
        element("td", "lnb-expected", formatValue(e, te, ne)),
        element("td", "lnb-actual", formatValue(a, ta, na)),
        element("td", "lnb-delta", same ? "" : difference(e, a))
      );
      rows.push(row);
    }
    const grid = element("table", "lnb-values");
    const thead = element("thead");
    thead.append(head);
    const tbody = element("tbody");
    tbody.append(...rows);
    grid.append(thead, tbody);
    const parts = [grid];
    if (message.missing) parts.unshift(element("p", "lnb-note", message.missing));
    table.replaceChildren(...parts);
    root.dataset.rows = String(rows.length);
    const target = focus === null ? null : tbody.querySelector(`tr[data-index="${focus}"]`);
    if (target && target.scrollIntoView) target.scrollIntoView({ block: "nearest" });
  }
  function goTo(flat) {
    focus = flat;
    request("all", Math.floor(flat / summary.page_size));
  }
  function heatmap() {
    const layout = summary.heatmap;
    const cells = typed(model.get("heatmap"), "u1");
    if (!layout || !cells || !summary.count) return null;
    const box = element("div", "lnb-heatmap");
    const caption = element("div", "lnb-caption", layout.rows > 1 ? `where they differ (${layout.rows} × ${layout.columns}; click to jump)` : "where they differ (click to jump)");
    const image = document.createElement("canvas");
    image.width = layout.grid_columns;
    image.height = layout.grid_rows;
    const ctx = image.getContext("2d");
    const pixels = ctx.createImageData(layout.grid_columns, layout.grid_rows);
    const theme = readTheme(root);
    const [equal, few, many] = [theme.bgAlt, theme.markBg, theme.hazard].map(rgbOf);
    for (let k = 0; k < cells.length; k++) {
      const level = cells[k];
      const p = 4 * k;
      if (level === 0) {
        pixels.data.set([...equal, 255], p);
      } else {
        const t = level / 255;
        pixels.data.set([0, 1, 2].map((c) => few[c] + (many[c] - few[c]) * t).concat(255), p);
      }
    }
    ctx.putImageData(pixels, 0, 0);
    image.className = "lnb-heatmap-canvas";
    const height = layout.grid_rows === 1 ? 18 : Math.min(260, Math.max(60, layout.grid_rows * 3));
    image.style.height = `${height}px`;
    image.style.imageRendering = "pixelated";
    image.addEventListener("click", (event) => {
      const rect = image.getBoundingClientRect();
      const gc = Math.min(layout.grid_columns - 1, Math.floor((event.clientX - rect.left) / rect.width * layout.grid_columns));
      const gr = Math.min(layout.grid_rows - 1, Math.floor((event.clientY - rect.top) / rect.height * layout.grid_rows));
      const row = Math.floor(gr * layout.rows / layout.grid_rows);
      const column = Math.floor(gc * layout.columns / layout.grid_columns);
      goTo(row * layout.columns + column);
    });
    box.append(caption, image);
    return box;
  }
  function pictures() {
    if (!summary.pictures) return null;
    const row = element("div", "lnb-pictures");
    for (const [caption, url] of Object.entries(summary.pictures)) {
      const figure = element("figure", "lnb-picture");
      const image = document.createElement("img");
      image.src = url;
      image.alt = caption;
      figure.append(image, element("figcaption", "", caption));
      row.append(figure);
    }
    return row;
  }
  function statistics() {
    const box = element("div", "lnb-stats");
    const share = summary.size ? (100 * summary.count / summary.size).toFixed(summary.count === summary.size ? 0 : 2) : "0";
    const verdict = element("div", summary.count ? "lnb-bad" : summary.verdict ? "lnb-bad lnb-lucky" : "lnb-good");
    verdict.textContent = summary.count ? `${summary.count.toLocaleString()} of ${summary.size.toLocaleString()} elements differ (${share}%)` : summary.verdict || `all ${summary.size.toLocaleString()} elements are equal`;
    box.append(verdict);
    box.dataset.count = String(summary.count);
    const shape = `(${summary.shape.join(", ")}${summary.shape.length === 1 ? "," : ""})`;
    box.append(element("div", "lnb-note", `shape ${shape} · ${summary.names[0]} ${summary.dtypes[0]} · ${summary.names[1]} ${summary.dtypes[1]}`));
    if (summary.errors) {
      const e = summary.errors;
      const fmt = formatNumber;
      box.append(
        element(
          "div",
          "lnb-errors",
          `max abs error ${fmt(e.max_abs)} at (${e.max_abs_index.join(", ")}) · max rel error ${fmt(e.max_rel)} at (${e.max_rel_index.join(", ")})`
        )
      );
    }
    if (summary.first_flat.length) {
      const line = element("div", "lnb-first", "first differing: ");
      summary.first_flat.forEach((flat, k) => {
        const chip = element("button", "lnb-chip", `(${summary.first_indices[k].join(", ")})`);
        chip.type = "button";
        chip.addEventListener("click", () => goTo(flat));
        line.append(chip);
      });
      if (summary.count > summary.first_flat.length) line.append(document.createTextNode(" …"));
      box.append(line);
    }
    return box;
  }
  function controls() {
    const bar = element("div", "lnb-toolbar");
    const previous = element("button", "", "◀");
    previous.type = "button";
    const next = element("button", "", "▶");
    next.type = "button";
    const label = element("span", "lnb-page-label", "");
    const modeSelect = element("select");
    for (const [value, text] of [
      ["all", "all elements"],
      ["differing", "differing only"]
    ]) {
      const option = element("option", "", text);
      option.value = value;
      modeSelect.append(option);
    }
    previous.addEventListener("click", () => request(mode, Math.max(page - 1, 0)));
    next.addEventListener("click", () => request(mode, Math.min(page + 1, summary.pages[mode] - 1)));
    modeSelect.addEventListener("change", () => {
      focus = null;
      request(modeSelect.value, 0);
    });
    bar.append(previous, label, next, modeSelect);
    return { bar, previous, next, label, mode: modeSelect };
  }
  function build() {
    summary = model.get("summary") || {};
    focus = null;
    const parts = [];
    if (summary.title) parts.push(element("div", "lnb-diff-title", summary.title));
    root.dataset.available = String(Boolean(summary.available));
    if (!summary.available) {
      for (const note of summary.notes || []) parts.push(element("p", "lnb-note", note));
      root.replaceChildren(...parts);
      return;
    }
    parts.push(statistics());
    for (const note of summary.notes || []) parts.push(element("div", "lnb-note", note));
    const shown = pictures();
    if (shown) parts.push(shown);
    const map = heatmap();
    if (map) parts.push(map);
    pager = controls();
    table = element("div", "lnb-values-frame");
    parts.push(pager.bar, table);
    root.replaceChildren(...parts);
    root.dataset.count = String(summary.count);
    request("all", 0);
  }
  model.on("msg:custom", onMessage);
  model.on("change:summary", build);
  build();
  return () => {
    model.off("msg:custom", onMessage);
    model.off("change:summary", build);
  };
}
var diff_default = widget(render);

// luisa_nb/widgets/static/src/contents.js
function bufferModel(model, index, commandId) {
  const handlers = /* @__PURE__ */ new Set();
  return {
    get(key) {
      const buffer = (model.get("summary").buffers || [])[index] || {};
      if (key === "summary") return buffer.summary;
      if (key === "heatmap") return (model.get("heatmaps") || [])[index];
      return void 0;
    },
    on(name, handler) {
      if (name === "msg:custom") handlers.add(handler);
    },
    off(name, handler) {
      handlers.delete(handler);
    },
    send(content) {
      model.send({ ...content, buffer: index, command_id: commandId });
    },
    deliver(message, buffers) {
      for (const handler of handlers) handler(message, buffers);
    }
  };
}
function render2({ model, el }) {
  const root = element("div", "lnb-contents");
  root.tabIndex = 0;
  el.replaceChildren(root);
  let views = [];
  function clear() {
    for (const view of views) if (view.cleanup) view.cleanup();
    views = [];
  }
  function build() {
    clear();
    const summary = model.get("summary") || {};
    const id = summary.record_id;
    root.dataset.command = id === null || id === void 0 ? "" : String(id);
    const parts = [];
    if (id !== null && id !== void 0) {
      parts.push(element("div", "lnb-contents-title", summary.title));
      const since = summary.before === null || summary.before === void 0 ? "the start" : `#${summary.before}`;
      if (!summary.note) parts.push(element("div", "lnb-note", `before: after ${since} · after: after #${id} · ←/→ step`));
    }
    if (summary.note) parts.push(element("p", "lnb-note", summary.note));
    (summary.buffers || []).forEach((buffer, index) => {
      const section = element("section", "lnb-contents-buffer");
      section.dataset.buffer = buffer.name;
      const mount = element("div");
      section.append(mount);
      parts.push(section);
      const sub = bufferModel(model, index, id);
      views.push({ model: sub, cleanup: diff_default.render({ model: sub, el: mount }) });
    });
    root.replaceChildren(...parts);
  }
  function onMessage(message, buffers) {
    if (!message || message.command_id !== (model.get("summary") || {}).record_id) return;
    const view = views[message.buffer];
    if (view) view.model.deliver(message, buffers);
  }
  function step(direction) {
    const steps = new Int32Array(toArrayBuffer(model.get("steps")));
    if (!steps.length) return;
    const current = model.get("selected_command");
    let at = steps.indexOf(current);
    if (at < 0) {
      const after = steps.findIndex((id) => id > (current ?? -Infinity));
      at = direction > 0 ? (after < 0 ? steps.length : after) - 1 : after < 0 ? steps.length : after;
    }
    const next = Math.min(Math.max(at + direction, 0), steps.length - 1);
    if (steps[next] === current) return;
    model.set("selected_command", steps[next]);
    model.save_changes();
  }
  function onKey(event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.shiftKey) return;
    if (event.key !== "ArrowLeft" && event.key !== "ArrowRight") return;
    if (event.target.closest && event.target.closest("select, input")) return;
    event.preventDefault();
    event.stopPropagation();
    step(event.key === "ArrowRight" ? 1 : -1);
  }
  root.addEventListener("keydown", onKey);
  model.on("msg:custom", onMessage);
  model.on("change:summary", build);
  build();
  return () => {
    clear();
    root.removeEventListener("keydown", onKey);
    model.off("msg:custom", onMessage);
    model.off("change:summary", build);
  };
}
var contents_default = widget(render2);
export {
  contents_default as default
};
