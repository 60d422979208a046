"""One theme: every ``--lnb-*`` property any view uses is defined once, in
``luisa_nb.views.theme``, and the stylesheet, the inline styles and the picture take their
colours from it."""

from __future__ import annotations

import re

from luisa_nb.views import theme
from luisa_nb.views.html import theme_style
from luisa_nb.widgets.html_page import STATIC, stylesheet

PROPERTY = re.compile(r"--lnb-[a-z0-9-]+")
DEFINITION = re.compile(r"(--lnb-[a-z0-9-]+):\s*([^;]+);")


def _definitions(css: str) -> list[tuple[str, str]]:
    return DEFINITION.findall(css)


def test_the_theme_names_each_property_once_with_a_light_and_a_dark_value():
    names = [colour.property for colour in theme.COLOURS]
    assert len(set(names)) == len(names)
    assert theme.HAZARD.property == "--lnb-hazard" and theme.FG_MUTED.property == "--lnb-fg-muted"
    assert theme.HAZARD.css() == "var(--lnb-hazard,#c62828)"
    for colour in theme.COLOURS:
        assert re.fullmatch(r"#[0-9a-f]{3}|#[0-9a-f]{6}", colour.light), colour
        assert colour.dark.startswith(("#", "var(--lnb-")), colour


def test_the_generated_css_sets_light_values_then_dark_ones():
    css = theme.theme_css()
    light, jupyter_dark, rest = css.split("}\n", 2)
    assert dict(_definitions(light)) == {
        colour.property: f"var({colour.jupyter}, {colour.light})"
        if colour.jupyter
        else colour.light
        for colour in theme.COLOURS
    }
    assert dict(_definitions(jupyter_dark))["--lnb-hazard"] == theme.HAZARD.dark
    assert "--lnb-fg" not in dict(_definitions(jupyter_dark))  # JupyterLab's own text colour
    alone_dark = dict(_definitions(rest))
    assert alone_dark["--lnb-fg"] == theme.FG.dark and alone_dark["--lnb-bg"] == theme.BG.dark
    assert "--lnb-mark-bg" not in alone_dark  # a mark is the same in every theme
    for scope in theme.SCOPES:
        assert scope in light


def test_the_stylesheet_defines_no_property_of_its_own_and_uses_only_the_themes():
    own = (STATIC / "widgets.css").read_text(encoding="utf-8")
    assert _definitions(own) == []
    assert stylesheet().startswith(theme.theme_css())
    defined = {colour.property for colour in theme.COLOURS}
    used = set(PROPERTY.findall(own))
    for script in (STATIC / "src").rglob("*.js"):
        used |= {name for name in PROPERTY.findall(script.read_text(encoding="utf-8"))}
    assert used and used <= defined, used - defined
    assert theme_style() == f"<style>{theme.theme_css()}</style>"


def test_one_hazard_red_and_one_amber_colour_each_kind_in_every_view():
    assert theme.kind_colour("LATENT_STALE_UPLOAD") == theme.LATENT.css()
    for kind in ("STALE_UPLOAD", "HOST_WRITE_IN_FLIGHT", "DEVICE_RACE", "HOST_USE_AFTER_FREE"):
        assert theme.kind_colour(kind) == theme.HAZARD.css()
    names = [name for name, _ in theme.KIND_COLOURS]
    assert names[:5] == ["upload", "download", "copy", "fill", "dispatch"]
    assert len(set(names)) == len(names) == 10
