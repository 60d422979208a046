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

// luisa_nb/widgets/static/src/hazards.js
var STEP = 200;
var LATENT = "LATENT_STALE_UPLOAD";
function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== void 0) node.textContent = text;
  return node;
}
function moreButton(left, onClick) {
  const more = element("button", "lnb-chip lnb-more", `show ${Math.min(STEP, left)} more of ${left}`);
  more.type = "button";
  more.addEventListener("click", (event) => {
    event.stopPropagation();
    onClick();
  });
  return more;
}
function render({ model, el }) {
  const root = element("div", "lnb-hazards");
  el.replaceChildren(root);
  let shown = STEP;
  const expanded = /* @__PURE__ */ new Map();
  function occurrenceList(group, hazards, selected) {
    const listed = expanded.get(group.index);
    const list = element("div", "lnb-occurrences");
    for (const index of group.occurrences.slice(0, listed)) {
      const hazard = hazards[index];
      const ids = hazard ? hazard.command_ids.map((id) => `#${id}`).join(" → ") : `${index + 1}`;
      const row = element("div", "lnb-occurrence", ids);
      row.tabIndex = 0;
      row.dataset.hazardIndex = String(index);
      if (index === selected) row.classList.add("lnb-selected");
      list.append(row);
    }
    if (group.occurrences.length > listed) {
      list.append(
        moreButton(group.occurrences.length - listed, () => {
          expanded.set(group.index, listed + STEP);
          paint();
        })
      );
    }
    return list;
  }
  function entry(group, hazards, selected) {
    const first = group.occurrences[0];
    const item = element("div", "lnb-hazard lnb-finding");
    item.tabIndex = 0;
    item.dataset.hazardIndex = String(first);
    item.dataset.group = String(group.index);
    item.dataset.count = String(group.count);
    item.dataset.kind = group.kind;
    if (group.kind === LATENT) item.classList.add("lnb-latent-hazard");
    if (selected !== null && selected !== void 0 && group.occurrences.includes(selected)) {
      item.classList.add("lnb-selected");
    }
    const title = element("div", "lnb-hazard-title");
    title.append(element("b", group.kind === LATENT ? "lnb-latent" : "lnb-bad", group.kind));
    if (group.count > 1) title.append(" ", element("b", "lnb-count", `×${group.count}`));
    title.append(` ${group.place}`);
    const where = element("div", "lnb-note lnb-hazard-occurrences", group.occurrence_text);
    const message = element("div", "lnb-hazard-message", group.message);
    const fix = element("div", "lnb-hazard-fix", `fix: ${group.fix}`);
    item.append(title, where, message, fix);
    if (group.count > 1) {
      const open = expanded.has(group.index);
      const toggle = element(
        "button",
        "lnb-chip lnb-expand",
        open ? "hide the occurrences" : `show the ${group.count} occurrences`
      );
      toggle.type = "button";
      toggle.setAttribute("aria-expanded", String(open));
      toggle.addEventListener("click", (event) => {
        event.stopPropagation();
        if (open) expanded.delete(group.index);
        else expanded.set(group.index, STEP);
        paint();
      });
      item.append(toggle);
      if (open) item.append(occurrenceList(group, hazards, selected));
    }
    return item;
  }
  function paint() {
    const hazards = modelHazards(model);
    const groups = model.get("findings") || [];
    const selected = model.get("selected_hazard");
    const anchor = model.get("anchor");
    if (anchor) root.id = anchor;
    root.dataset.count = String(hazards.length);
    root.dataset.groups = String(groups.length);
    if (!groups.length) {
      root.replaceChildren(element("p", "lnb-good", "No hazards found in this trace."));
      return;
    }
    if (selected !== null && selected !== void 0) {
      const hazard = hazards[selected];
      const position = hazard && hazard.group !== void 0 && hazard.group !== null ? hazard.group : -1;
      if (position >= shown) shown = position + 1;
    }
    const items = groups.slice(0, shown).map((group) => entry(group, hazards, selected));
    if (groups.length > shown) {
      items.push(
        moreButton(groups.length - shown, () => {
          shown += STEP;
          paint();
        })
      );
    }
    root.replaceChildren(...items);
    const chosen = root.querySelector(".lnb-occurrence.lnb-selected") || root.querySelector(".lnb-hazard.lnb-selected");
    if (chosen && chosen.scrollIntoView && root.scrollHeight > root.clientHeight) {
      chosen.scrollIntoView({ block: "nearest" });
    }
  }
  function choose(event) {
    const item = event.target.closest(".lnb-occurrence") || event.target.closest(".lnb-hazard");
    if (!item) return;
    model.set("selected_hazard", Number(item.dataset.hazardIndex));
    model.save_changes();
  }
  const onKey = (event) => {
    if (event.key === "Enter" || event.key === " ") choose(event);
  };
  root.addEventListener("click", choose);
  root.addEventListener("keydown", onKey);
  const keys = ["change:hazards", "change:findings", "change:selected_hazard", "change:anchor"];
  for (const key of keys) model.on(key, paint);
  paint();
  return () => {
    for (const key of keys) model.off(key, paint);
  };
}
var hazards_default = widget(render);
export {
  hazards_default as default
};
