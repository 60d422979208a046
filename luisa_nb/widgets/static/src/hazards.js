// Hazard list of a luisa_nb trace: kind, the two commands, the message and the fix.
// Click a hazard to select it (and, through the selection, both of its commands).
//
// Model keys read: hazards (JSON list), selected_hazard. Key written: selected_hazard.
// A trace with thousands of hazards shows them STEP at a time ("show more").

import { widget } from "./shared/widget.js";

const STEP = 200;
// Colours keep one meaning in every view: a latent stale upload is amber, any other
// hazard red (the stylesheet's --lnb-latent and --lnb-hazard).
const LATENT = "LATENT_STALE_UPLOAD";

function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "lnb-hazards";
  el.replaceChildren(root);
  let shown = STEP;

  function paint() {
    const hazards = model.get("hazards") || [];
    const selected = model.get("selected_hazard");
    root.dataset.count = String(hazards.length);
    if (!hazards.length) {
      const none = document.createElement("p");
      none.className = "lnb-good";
      none.textContent = "No hazards found in this trace.";
      root.replaceChildren(none);
      return;
    }
    if (selected !== null && selected !== undefined && selected >= shown) shown = selected + 1;
    const items = hazards.slice(0, shown).map((hazard) => {
      const item = document.createElement("div");
      item.className = "lnb-hazard";
      item.tabIndex = 0;
      item.dataset.hazardIndex = String(hazard.index);
      item.dataset.kind = hazard.kind;
      if (hazard.kind === LATENT) item.classList.add("lnb-latent-hazard");
      if (hazard.index === selected) item.classList.add("lnb-selected");
      const title = document.createElement("div");
      title.className = "lnb-hazard-title";
      const kind = document.createElement("b");
      kind.className = hazard.kind === LATENT ? "lnb-latent" : "lnb-bad";
      kind.textContent = hazard.kind;
      title.append(kind, document.createTextNode(` ${hazard.descriptions.join(" → ")}`));
      const message = document.createElement("div");
      message.className = "lnb-hazard-message";
      message.textContent = hazard.message;
      const fix = document.createElement("div");
      fix.className = "lnb-hazard-fix";
      fix.textContent = `fix: ${hazard.fix}`;
      item.append(title, message, fix);
      return item;
    });
    if (hazards.length > shown) {
      const more = document.createElement("button");
      more.type = "button";
      more.className = "lnb-chip lnb-more";
      more.textContent = `show ${Math.min(STEP, hazards.length - shown)} more of ${hazards.length - shown}`;
      more.addEventListener("click", (event) => {
        event.stopPropagation();
        shown += STEP;
        paint();
      });
      items.push(more);
    }
    root.replaceChildren(...items);
    const chosen = root.querySelector(".lnb-hazard.lnb-selected");
    if (chosen && chosen.scrollIntoView && root.scrollHeight > root.clientHeight) {
      chosen.scrollIntoView({ block: "nearest" });
    }
  }

  function choose(event) {
    const item = event.target.closest(".lnb-hazard");
    if (!item) return;
    model.set("selected_hazard", Number(item.dataset.hazardIndex));
    model.save_changes();
  }
  const onKey = (event) => {
    if (event.key === "Enter" || event.key === " ") choose(event);
  };
  root.addEventListener("click", choose);
  root.addEventListener("keydown", onKey);
  model.on("change:hazards", paint);
  model.on("change:selected_hazard", paint);
  paint();
  return () => {
    model.off("change:hazards", paint);
    model.off("change:selected_hazard", paint);
  };
}

export default widget(render);
