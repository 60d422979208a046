// Generated from luisa_nb/widgets/static/src by js/build.mjs (esbuild); do not edit.

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
    if (selected !== null && selected !== void 0 && selected >= shown) shown = selected + 1;
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
var hazards_default = widget(render);
export {
  hazards_default as default
};
