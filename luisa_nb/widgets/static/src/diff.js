// Expected against actual values (DiffView, StagingInspector): statistics, a heatmap of
// differences, and a side-by-side table of one page of values with differing elements
// highlighted.
//
// Model keys read: summary (JSON), heatmap (uint8 cells, bytes). Pages of values come
// from the kernel on request (model.send({type: "page", mode, page, request}) answered
// by a "page" message with three buffers: flat indices as f8, expected, actual), or,
// in a static page, from the embedded buffers all_* and diff_*.

import { TYPES, toArrayBuffer } from "./shared/columns.js";
import { element } from "./shared/dom.js";
import { readTheme, rgbOf } from "./shared/theme.js";
import { widget } from "./shared/widget.js";

function typed(value, dtype) {
  const buffer = value ? toArrayBuffer(value) : null;
  if (!buffer) return null;
  const Type = TYPES[dtype];
  return new Type(buffer, 0, Math.floor(buffer.byteLength / Type.BYTES_PER_ELEMENT));
}

// Numbers as Python prints them: shortest round-trip digits, "123.0", "nan", "inf".
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
  if (value === null || value === undefined) return "—";
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

// The index of element `flat` as text: (x, y, channel) of a pixel in an image (the
// summary's index_name says so), else the array index.
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
    return model.get("all_expected") !== undefined && model.get("all_expected") !== null;
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
      actual: typed(buffers[2], ta),
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
      const same = typeof e === "bigint" || typeof a === "bigint" ? BigInt(e) === BigInt(a) : e === a || (Number.isNaN(e) && Number.isNaN(a));
      if (!same) row.classList.add("lnb-differs");
      if (flat === focus) row.classList.add("lnb-focus");
      row.append(
        element("td", "lnb-index", unravel(flat, summary.shape, indexName !== "index")),
        element("td", "lnb-expected", formatValue(e, te, ne)),
        element("td", "lnb-actual", formatValue(a, ta, na)),
        element("td", "lnb-delta", same ? "" : difference(e, a)),
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
    // Equal cells in the theme's alternate background; differences from the pale mark
    // colour (few) to the hazard colour (many).
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
      const gc = Math.min(layout.grid_columns - 1, Math.floor(((event.clientX - rect.left) / rect.width) * layout.grid_columns));
      const gr = Math.min(layout.grid_rows - 1, Math.floor(((event.clientY - rect.top) / rect.height) * layout.grid_rows));
      const row = Math.floor((gr * layout.rows) / layout.grid_rows);
      const column = Math.floor((gc * layout.columns) / layout.grid_columns);
      goTo(row * layout.columns + column);
    });
    box.append(caption, image);
    return box;
  }

  // An image channel by channel: its two sides and their difference, as pictures
  // (summary.pictures: caption -> PNG data URL, three per channel, one row each).
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
    const share = summary.size ? ((100 * summary.count) / summary.size).toFixed(summary.count === summary.size ? 0 : 2) : "0";
    const verdict = element("div", summary.count ? "lnb-bad" : summary.verdict ? "lnb-bad lnb-lucky" : "lnb-good");
    verdict.textContent = summary.count
      ? `${summary.count.toLocaleString()} of ${summary.size.toLocaleString()} elements differ (${share}%)`
      : summary.verdict || `all ${summary.size.toLocaleString()} elements are equal`;
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
          `max abs error ${fmt(e.max_abs)} at (${e.max_abs_index.join(", ")}) · max rel error ${fmt(e.max_rel)} at (${e.max_rel_index.join(", ")})`,
        ),
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
      ["differing", "differing only"],
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

export default widget(render);
