// A renderer as the module a widget loads: anywidget takes the default export's render
// (a named `render` export would win over it, so there is none), and the static page
// calls the same one. A live widget that renders hides its static twin: the text/html
// output displayed beside its widget view, which nbconvert pages and notebooks opened
// without a kernel show instead. A CSS rule per twin id hides twins already on the page
// and any added later; the set tells a twin's loader not to boot. A static page's models
// name no twins.

function hideStaticTwins(model) {
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

// The default export of a widget's module: `render` that first hides the static twins.
export function widget(render) {
  return {
    render(props) {
      hideStaticTwins(props.model);
      return render(props);
    },
  };
}
