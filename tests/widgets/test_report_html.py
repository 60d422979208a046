"""The static report: self-contained (no network), data embedded, same renderers."""

from __future__ import annotations

import base64
import json
import re

import numpy as np

from luisa_nb.report import report_html, write_report
from luisa_nb.views.timeline import build_timeline
from luisa_nb.widgets.html_page import module_source

EXTERNAL = re.compile(r"""(?:src|href|action)\s*=\s*["']?\s*(?:https?:)?//""", re.I)


def models_of(page: str) -> dict:
    text = re.search(
        r'<script type="application/json" class="lnb-models">(.*?)</script>', page, re.S
    )
    return json.loads(text.group(1))


def test_report_has_no_external_urls(seed):
    page = report_html(seed.trace)
    assert not EXTERNAL.search(page)
    assert "@import" not in page and "url(http" not in page
    assert not re.search(r"""import\s*\(?\s*["']https?:""", page)
    assert page.startswith("<!DOCTYPE html>")


def test_report_embeds_data_and_renderers(seed):
    page = report_html(seed.trace)
    spec = models_of(page)
    trace_model = next(m for m in spec["models"].values() if "data" in m["buffers"])
    packed = base64.b64decode(trace_model["buffers"]["data"])
    assert packed == build_timeline(seed.trace).pack()
    assert spec["hazards"][0]["command_ids"] == [seed.download, seed.upload]
    for name in ("page", "timeline", "table", "hazards", "diff"):
        assert f'data-module="{name}">{module_source(name)}</script>' in page
    diffs = [m for m in spec["models"].values() if "all_expected" in m["buffers"]]
    (stale,) = diffs
    staged = np.frombuffer(base64.b64decode(stale["buffers"]["all_actual"]), "<f4")
    expected = np.frombuffer(base64.b64decode(stale["buffers"]["all_expected"]), "<f4")
    assert staged.tolist() == [123.0] * 1024 and expected[:3].tolist() == [0.0, 1001.0, 2002.0]
    assert stale["state"]["summary"]["count"] == 1024


def test_report_text_without_scripts(seed):
    """What GitHub shows: header, hazard with message and fix, a picture, the table."""
    page = report_html(seed.trace)
    visible = re.sub(r"<script.*?</script>", "", page, flags=re.S)
    assert "staging: submit" in visible
    assert "STALE_UPLOAD" in visible
    assert f"synchronize after #{seed.download}" in visible
    assert 'src="data:image/png;base64,' in visible
    assert f"#{seed.upload}" in visible and "upload z &lt;- z_data" in visible
    assert "Stale uploads (1)" in visible and "1024 of 1024 elements differ" in visible


def test_write_report_from_a_saved_trace(seed, tmp_path):
    saved = seed.trace.save(tmp_path / "seed.lnbtrace")
    path = write_report(saved, tmp_path / "report.html")
    assert path == tmp_path / "report.html"
    text = path.read_text(encoding="utf-8")
    assert "STALE_UPLOAD" in text and models_of(text)["hazards"][0]["kind"] == "STALE_UPLOAD"
    assert "luisa_nb trace report" in text


def test_report_of_a_trace_without_hazards(execute_seed):
    page = report_html(execute_seed.trace)
    spec = models_of(page)
    assert [h["kind"] for h in spec["hazards"]] == ["LATENT_STALE_UPLOAD"]
    assert "Stale uploads" not in page  # the bytes were right
    diffs = [m for m in spec["models"].values() if "all_expected" in m["buffers"]]
    assert len(diffs) == 1 and diffs[0]["state"]["summary"]["count"] == 0


def test_scripts_cannot_break_out_of_their_elements(seed):
    page = report_html(seed.trace)
    scripts = re.findall(r"<script[^>]*>(.*?)</script>", page, re.S)
    assert all("<script" not in body.lower() for body in scripts)


def test_the_no_script_hazard_list_colours_each_kind_as_every_view_does():
    from luisa_nb.views.fallbacks import hazards_fallback
    from luisa_nb.views.theme import HAZARD, LATENT

    hazard = {
        "place": "download → upload",
        "occurrence_text": "#1 → #2",
        "count": 1,
        "message": "m",
        "fix": "f",
    }
    latent = hazards_fallback([{**hazard, "kind": "LATENT_STALE_UPLOAD"}])
    stale = hazards_fallback([{**hazard, "kind": "STALE_UPLOAD"}])
    assert (
        LATENT.css() == "var(--lnb-latent,#8a5a00)" and HAZARD.css() == "var(--lnb-hazard,#c62828)"
    )
    assert f"color:{LATENT.css()};font-weight:bold'>LATENT_STALE_UPLOAD<" in latent
    assert HAZARD.css() not in latent
    assert f"color:{HAZARD.css()};font-weight:bold'>STALE_UPLOAD<" in stale
    assert "download → upload<br><small>#1 → #2</small>" in stale
