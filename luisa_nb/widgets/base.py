"""What every luisa_nb widget shares: the stylesheet, and a ``text/html`` fallback
beside the widget view in its MIME bundle, so nbconvert, GitHub and a browser with no
kernel show the same picture."""

from __future__ import annotations

from typing import Any

import anywidget

from luisa_nb.widgets.html_page import STATIC


class StaticFallbackWidget(anywidget.AnyWidget):
    """An anywidget whose MIME bundle also carries :meth:`_repr_html_`."""

    _css = STATIC / "widgets.css"

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict, dict] | None:
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle
        return {**data, "text/html": self._repr_html_()}, metadata

    def _repr_html_(self) -> str:
        raise NotImplementedError
