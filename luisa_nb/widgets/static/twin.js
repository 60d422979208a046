// Appended to a renderer module when it is a live widget's _esm (the static page uses
// the module's named render, without this). A live widget that renders hides its static
// twin: the text/html output displayed beside its widget view, which nbconvert pages and
// notebooks opened without a kernel show instead. A CSS rule per twin id hides twins
// already on the page and any added later; the set tells a twin's loader not to boot.

function lnbHideStaticTwins(model) {
  const registry = (globalThis.__luisa_nb = globalThis.__luisa_nb || {});
  registry.live = registry.live || new Set();
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

export default {
  render(props) {
    lnbHideStaticTwins(props.model);
    return render(props);
  },
};
