"""The one theme of every view: the colours of the widgets, the static pages, the IPython
summary, the comparison table and the matplotlib picture.

Each colour is a CSS custom property ``--lnb-<name>`` (``fg_muted`` is
``--lnb-fg-muted``), written by :func:`theme_css` at the head of the stylesheet; the
canvas renderers read the same properties in the browser. Text, surfaces and borders
follow JupyterLab's theme variables, with a light palette where there are none. The
accents are set per theme, light or dark, because JupyterLab's own error, warning and
success colours are too pale for text on white. Each accent keeps one meaning
everywhere: hazard (red) a stale upload or any other hazard, latent (amber) a latent
stale upload, ok (green) nothing wrong, link (blue) fixes and focus. A mark (a differing
value) is a pale background with dark text in every theme.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache


@dataclass(frozen=True)
class ThemeColour:
    """One ``--lnb-*`` property: its light and dark values and, where it follows
    JupyterLab's theme, the JupyterLab variable (whose value it takes in JupyterLab)."""

    name: str
    light: str
    dark: str
    jupyter: str | None = None

    @property
    def property(self) -> str:
        return f"--lnb-{self.name.replace('_', '-')}"

    def css(self) -> str:
        """``var(--lnb-<name>,<light>)``: the colour where the stylesheet's properties
        apply, its light value on a page that drops them."""
        return f"var({self.property},{self.light})"


FG = ThemeColour("fg", "#222", "#e6e6e6", "--jp-ui-font-color1")
FG_MUTED = ThemeColour("fg_muted", "#5f5f5f", "#a6a6a6", "--jp-ui-font-color2")
BG = ThemeColour("bg", "#fff", "#141414", "--jp-layout-color0")
BG_ALT = ThemeColour("bg_alt", "#f0f0f0", "#2e2e2e", "--jp-layout-color2")
BORDER = ThemeColour("border", "#ddd", "#444", "--jp-border-color2")
HOVER = ThemeColour("hover", "#eef3fb", "#2a3240")
SELECTED = ThemeColour("selected", "#ffe9a8", "#3d3a1f")
SELECTED_FG = ThemeColour("selected_fg", "#1a1a1a", "var(--lnb-fg)")
HAZARD = ThemeColour("hazard", "#c62828", "#ff8a80")
LATENT = ThemeColour("latent", "#8a5a00", "#ffb74d")
OK = ThemeColour("ok", "#2e7d32", "#81c784")
LINK = ThemeColour("link", "#1565c0", "#64b5f6")
MARK_BG = ThemeColour("mark_bg", "#ffd6d6", "#ffd6d6")
MARK_FG = ThemeColour("mark_fg", "#7f0000", "#7f0000")
FLAGGED_BG = ThemeColour("flagged_bg", "#fff8c5", "#fff8c5")
FLAGGED_FG = ThemeColour("flagged_fg", "#3d3000", "#3d3000")
# Only the timeline's canvas uses these, the same in every theme: the dark and light ink
# of text on kind-coloured bars (whichever contrasts more), range brackets by depth, and
# kernel-compile blocks on the host lane.
INK_DARK = ThemeColour("ink_dark", "#111", "#111")
INK_LIGHT = ThemeColour("ink_light", "#fff", "#fff")
RANGES = tuple(
    ThemeColour(f"range_{depth}", colour, colour)
    for depth, colour in enumerate(("#8e44ad", "#16a085", "#c0392b", "#2c7fb8"), start=1)
)
COMPILE = ThemeColour("compile", "#f0a830", "#f0a830")

COLOURS = (
    FG,
    FG_MUTED,
    BG,
    BG_ALT,
    BORDER,
    HOVER,
    SELECTED,
    SELECTED_FG,
    HAZARD,
    LATENT,
    OK,
    LINK,
    MARK_BG,
    MARK_FG,
    FLAGGED_BG,
    FLAGGED_FG,
    INK_DARK,
    INK_LIGHT,
    *RANGES,
    COMPILE,
)

#: Record kinds in the views' code order, with their colours (commands first, then sync
#: points); the same in light and dark themes.
KIND_COLOURS: tuple[tuple[str, str], ...] = (
    ("upload", "#4e79a7"),
    ("download", "#59a14f"),
    ("copy", "#f28e2b"),
    ("fill", "#9c755f"),
    ("dispatch", "#b07aa1"),
    ("synchronize", "#8c8c8c"),
    ("signal", "#edc948"),
    ("wait", "#76b7b2"),
    ("event_synchronize", "#bab0ac"),
    ("callback", "#ff9da7"),
)

#: The static picture's surfaces (it is drawn in the light theme).
PICTURE_STRIPE = "#f3f3f3"
PICTURE_GRID = "#dddddd"

#: The elements that carry the theme properties: the roots of every view.
SCOPES = (
    ".lnb-root",
    ".lnb-viewer",
    ".lnb-timeline",
    ".lnb-table",
    ".lnb-hazards",
    ".lnb-diff",
    ".lnb-compare",
    ".lnb-ipython-hazards",
    ".lnb-ipython-summary",
)

MARK_STYLE = f"background:{MARK_BG.css()};color:{MARK_FG.css()}"
"""A differing or staged value: a pale mark with dark text, readable in any theme."""
FLAGGED_STYLE = f"background:{FLAGGED_BG.css()};color:{FLAGGED_FG.css()}"
"""A row of a command that a hazard names."""
LATENT_KIND = "LATENT_STALE_UPLOAD"


def kind_colour(kind: str) -> str:
    """Amber for a latent stale upload, red for any other hazard kind: the one meaning
    these colours have in every view."""
    return (LATENT if kind == LATENT_KIND else HAZARD).css()


@cache
def theme_css() -> str:
    """The ``--lnb-*`` properties as CSS: light values (or JupyterLab's variables), dark
    values under JupyterLab's dark theme, and all dark values on a page opened on its own
    by a reader who prefers dark."""
    scopes = f":is({', '.join(SCOPES)})"
    light = "".join(
        f"  {c.property}: {f'var({c.jupyter}, {c.light})' if c.jupyter else c.light};\n"
        for c in COLOURS
    )
    jupyter_dark = "".join(
        f"  {c.property}: {c.dark};\n" for c in COLOURS if not c.jupyter and c.dark != c.light
    )
    alone_dark = "".join(f"    {c.property}: {c.dark};\n" for c in COLOURS if c.dark != c.light)
    alone = "body:not([data-jp-theme-light])"
    return (
        "/* The theme: generated from luisa_nb.views.theme. */\n"
        f"{scopes} {{\n{light}}}\n"
        f'[data-jp-theme-light="false"] {scopes} {{\n{jupyter_dark}}}\n'
        "@media (prefers-color-scheme: dark) {\n"
        f"  {alone}:has(> .lnb-root) {{ background: #0b0b0b; }}\n"
        f"  {alone} > .lnb-root,\n  {alone} > .lnb-root {scopes} {{\n"
        f"{alone_dark}    color-scheme: dark;\n  }}\n}}\n"
    )
