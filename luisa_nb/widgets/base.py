"""What every luisa_nb widget shares: the stylesheet, a ``text/html`` fallback beside the
widget view in its MIME bundle, and how IPython displays it.

Displayed in IPython (``display(widget)``, or a widget as a cell's last expression), a
widget emits two outputs (:func:`display_with_static_twin`): its widget view, and its
*static twin*, a ``text/html`` output holding the same views as a self-contained page.
The live widget hides its twin when it renders, so JupyterLab shows one copy; where no
widget manager runs (nbconvert's HTML, with or without stored widget state, a notebook
reopened without a kernel, GitHub), the twin is what the reader sees.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anywidget
from traitlets import List, Unicode

from luisa_nb.widgets.html_page import static_twin, stylesheet

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


class StaticFallbackWidget(anywidget.AnyWidget):
    """An anywidget whose MIME bundle also carries :meth:`_repr_html_`, and which IPython
    displays with a static twin. A subclass sets ``_esm`` to its view's module
    (:func:`~luisa_nb.widgets.html_page.module_source`), which hides the static twins of
    the model ids in ``_twin_ids`` when it renders."""

    _css = stylesheet()
    _twin_ids = List(
        Unicode(), help="model ids of the static twins this widget hides when it renders"
    ).tag(sync=True)

    def hides_twin(self, model_id: str) -> None:
        """Hide the static twin of ``model_id`` (a widget containing this one) when this
        widget renders live."""
        if model_id not in self._twin_ids:
            self._twin_ids = [*self._twin_ids, model_id]

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict, dict] | None:
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle
        return {**data, "text/html": self._repr_html_()}, metadata

    def _repr_html_(self) -> str:
        raise NotImplementedError

    def _display_text(self) -> str:
        """The ``text/plain`` of the widget view (what a terminal prints)."""
        return f"<{type(self).__name__}>"

    def _ipython_display_(self, **_kwargs: Any) -> None:
        self.hides_twin(self.model_id)
        display_with_static_twin(self, self._repr_html_, self._display_text())


def display_with_static_twin(widget: Any, html: Callable[[], str], text: str) -> None:
    """Display ``widget`` (an ipywidget) as its widget view, then what ``html`` returns as
    its static twin. The widget view's output carries an empty ``text/html``, so that
    nbconvert without stored widget state and sanitising viewers show nothing for it, and
    ``text`` as ``text/plain`` for terminals. The twin is made once the widget view has
    left for the browser, which draws it meanwhile."""
    from IPython.display import display

    view = {"version_major": 2, "version_minor": 0, "model_id": widget.model_id}
    display({WIDGET_VIEW: view, "text/html": "", "text/plain": text}, raw=True)
    display({"text/html": static_twin(html(), [widget.model_id])}, raw=True)
