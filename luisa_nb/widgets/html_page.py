"""Self-contained HTML pages that run the widgets' own ES modules with no kernel.

A page inlines the stylesheet, the views' modules (:func:`module_source`, as
``text/x-luisa-nb-module`` script blocks that a small loader imports from Blob URLs), and
each model's state: JSON traits as they are, binary traits as base64. The ``page``
module gives every view a stand-in for anywidget's model and links selection across
them. Nothing is fetched from the network, so the page works offline, from ``file://``,
in nbconvert output and in a notebook's ``text/html`` fallback. Mounts hold plain-HTML
fallbacks (an image, tables) that show where scripts do not run (GitHub) and are
replaced by the views where they do.

A notebook shows a widget as two outputs: its widget view, and a *static twin*, this
page inside ``<div class="lnb-twin" data-lnb-twin="<model ids>">`` (:func:`static_twin`).
The live widget's module hides its twins when it renders (``static/src/shared/widget.js``);
inside a running Jupyter application a twin waits :data:`TWIN_GRACE_MS` for that before
it boots.
"""

from __future__ import annotations

import base64
import json
import uuid
from functools import cache
from pathlib import Path
from typing import Any

from luisa_nb.views.html import escape, script_json
from luisa_nb.views.theme import theme_css

STATIC = Path(__file__).parent / "static"
BUNDLES = STATIC / "bundles"
MODULE_TYPE = "text/x-luisa-nb-module"
HAZARDS_REFERENCE = "$hazards"
TWIN_GRACE_MS = 4000
"""How long a static twin inside JupyterLab or Notebook waits for its live widget."""

_LOADER = """<script type="module">
const root = document.getElementById("%(root)s");
const sources = {};
for (const node of root.querySelectorAll('script[type="%(type)s"]')) {
  sources[node.dataset.module] = node.textContent;
}
async function load(name) {
  const text = sources[name];
  try {
    return await import(URL.createObjectURL(new Blob([text], { type: "text/javascript" })));
  } catch (error) {
    return await import("data:text/javascript;charset=utf-8," + encodeURIComponent(text));
  }
}
function superseded() {
  const twin = root.closest(".lnb-twin");
  const live = globalThis.__luisa_nb && globalThis.__luisa_nb.live;
  return Boolean(twin && live && twin.dataset.lnbTwin.split(" ").some((id) => live.has(id)));
}
async function start() {
  const inJupyter = document.getElementById("jupyter-config-data") || globalThis.Jupyter;
  if (root.closest(".lnb-twin") && inJupyter) {
    await new Promise((resolve) => setTimeout(resolve, %(grace)d));
  }
  if (!superseded()) await (await load("page")).boot(root, load);
}
try {
  await start();
} catch (error) {
  const note = document.createElement("pre");
  note.className = "lnb-error";
  note.textContent = "luisa_nb: the interactive view failed to start: " + error;
  root.prepend(note);
  throw error;
}
</script>"""


@cache
def module_source(name: str) -> str:
    """The ES module of view ``name``: ``static/bundles/<name>.js``, built with its imports
    from ``static/src`` by ``js/build.mjs``. It is a live widget's ``_esm`` (its one export,
    the default, renders and hides the widget's static twins) and what a static page
    inlines (``page`` exports ``boot``)."""
    return (BUNDLES / f"{name}.js").read_text(encoding="utf-8")


def static_twin(fragment: str, twin_ids: list[str]) -> str:
    """``fragment`` as the static twin of the widgets ``twin_ids`` (model ids): hidden
    where one of them renders live, shown (and booted) everywhere else."""
    ids = escape(" ".join(twin_ids))
    return f'<div class="lnb-twin" data-lnb-twin="{ids}">{fragment}</div>'


@cache
def stylesheet() -> str:
    """The stylesheet of every widget and page: the theme's properties
    (:func:`~luisa_nb.views.theme.theme_css`), then ``static/widgets.css``."""
    return theme_css() + (STATIC / "widgets.css").read_text(encoding="utf-8")


def _script_safe(text: str) -> str:
    """Text that cannot end the ``<script>`` element holding it."""
    return text.replace("</script", "<\\/script").replace("<!--", "<\\!--")


class StaticPage:
    """Collects models and mounts, then writes them as one HTML fragment or document."""

    def __init__(self) -> None:
        self.root_id = f"lnb-{uuid.uuid4().hex[:12]}"
        self.models: dict[str, dict[str, Any]] = {}
        self.modules: set[str] = {"page"}
        self.hazards: list[dict[str, Any]] = []
        self.uploads_note = ""

    def add_model(self, state: dict[str, Any], buffers: dict[str, bytes] | None = None) -> str:
        """Register a model (JSON ``state`` plus binary ``buffers``); returns its id."""
        model_id = f"m{len(self.models)}"
        encoded = {
            key: base64.b64encode(value).decode("ascii") for key, value in (buffers or {}).items()
        }
        self.models[model_id] = {"state": state, "buffers": encoded}
        return model_id

    def mount(
        self,
        view: str,
        model_id: str,
        fallback: str = "",
        css_class: str = "",
        element_id: str = "",
    ) -> str:
        """A ``<div>`` where renderer ``static/<view>.js`` draws model ``model_id``
        (``element_id``: the ``id`` it takes, where links point)."""
        self.modules.add(view)
        identity = f' id="{escape(element_id)}"' if element_id else ""
        return (
            f'<div class="lnb-mount lnb-{view}-mount {css_class}"{identity} '
            f'data-lnb-view="{view}" data-lnb-model="{model_id}">{fallback}</div>'
        )

    def inspector(self, uploads: dict[int, str], idle: str) -> str:
        """A panel that shows the diff model of the selected upload (``uploads`` maps a
        command id to a model id)."""
        self.modules.add("diff")
        table = escape(json.dumps({str(k): v for k, v in uploads.items()}))
        return (
            f'<div class="lnb-inspector" data-lnb-inspector="{table}">'
            f'<div class="lnb-inspector-body"><p class="lnb-note">{idle}</p></div></div>'
        )

    def fragment(self, body: str) -> str:
        """``body`` with everything the page needs, as one ``<div>``."""
        models = {}
        for model_id, model in self.models.items():
            state = dict(model["state"])
            if state.get("hazards") is self.hazards:
                state["hazards"] = HAZARDS_REFERENCE  # one copy, in spec["hazards"]
            models[model_id] = {**model, "state": state}
        spec = {"models": models, "hazards": self.hazards, "uploads_note": self.uploads_note}
        modules = "".join(
            f'<script type="{MODULE_TYPE}" data-module="{name}">'
            f"{_script_safe(module_source(name))}</script>"
            for name in sorted(self.modules)
        )
        loader = _LOADER % {"root": self.root_id, "type": MODULE_TYPE, "grace": TWIN_GRACE_MS}
        return (
            f'<div class="lnb-root" id="{self.root_id}">'
            f"<style>{stylesheet()}</style>{body}"
            f'<script type="application/json" class="lnb-models">{script_json(spec)}</script>'
            f"{modules}{loader}</div>"
        )

    def document(self, body: str, title: str) -> str:
        """A whole HTML document around :meth:`fragment`."""
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title>"
            "<style>body{margin:16px;background:#fafafa}</style></head>"
            f"<body>{self.fragment(body)}</body></html>\n"
        )
