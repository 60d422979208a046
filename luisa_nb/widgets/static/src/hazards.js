// Finding list of a luisa_nb trace: one entry per place in the program (kind, count,
// what its commands do, the first occurrence's message and fix); a place with several
// occurrences expands to them. Click a place to select its first occurrence, or an
// occurrence to select it.
//
// Model keys read: findings (JSON list of groups), hazard_layout and hazard_data (every
// occurrence, packed; a static page: hazards, a JSON list),
// selected_hazard, anchor (the id the list takes, where "and N more" links point).
// Key written: selected_hazard. Many places show STEP at a time ("show more"), and so
// do the occurrences of one place.

import { modelHazards } from "./shared/columns.js";
import { widget } from "./shared/widget.js";

const STEP = 200;
// Colours keep one meaning in every view: a latent stale upload is amber, any other
// hazard red (the stylesheet's --lnb-latent and --lnb-hazard).
const LATENT = "LATENT_STALE_UPLOAD";

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
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
  const expanded = new Map(); // group index -> how many occurrences are listed

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
        }),
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
    if (selected !== null && selected !== undefined && group.occurrences.includes(selected)) {
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
        open ? "hide the occurrences" : `show the ${group.count} occurrences`,
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
    if (selected !== null && selected !== undefined) {
      const hazard = hazards[selected];
      const position = hazard && hazard.group !== undefined && hazard.group !== null ? hazard.group : -1;
      if (position >= shown) shown = position + 1;
    }
    const items = groups.slice(0, shown).map((group) => entry(group, hazards, selected));
    if (groups.length > shown) {
      items.push(
        moreButton(groups.length - shown, () => {
          shown += STEP;
          paint();
        }),
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

export default widget(render);
