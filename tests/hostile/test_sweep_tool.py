"""The sweep's own machinery: outcomes of probe cases, no process left behind, the page
splitter's script states, and the case generator's determinism."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.processes import running

from .cases import AREAS, case, generate
from .html_pages import check_markup, split_page
from .outcomes import OracleFailure
from .pool import WorkerPool, run_cases
from .probes import leaves_a_child, probes


def test_each_outcome_is_told_apart() -> None:
    cases, expected = zip(*probes(), strict=True)
    results = run_cases(cases, jobs=2)
    assert [result.outcome.value for result in results] == list(expected)
    assert results[4].detail.startswith("SetupError: setup: no no such backend device")
    assert "SIGSEGV" in results[6].detail
    assert "code 3" in results[7].detail


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_a_hung_case_leaves_no_process(tmp_path) -> None:
    pid_file = tmp_path / "child.pid"
    with WorkerPool(jobs=1) as pool:
        (result,) = pool.run([case(leaves_a_child, "leaves a child", str(pid_file), timeout=3)])
    assert result.outcome.value == "hang"
    assert pool.left_behind() == []
    assert not running(int(pid_file.read_text()))


@pytest.mark.parametrize(
    ("content", "ends_at_its_own_end"),
    [
        ('{"name": "plain"}', True),
        ('{"name": "<\\/script>"}', True),
        ('{"name": "<!-- x -->"}', True),
        ('{"name": "<!-- <script> -->"}', True),
        ('{"name": "<!--<script>"}', False),
        ('{"name": "<!--<SCRIPT "}', False),
        ('{"name": "<!--<scripts>"}', True),
    ],
)
def test_scripts_split_as_a_browser_splits_them(content: str, ends_at_its_own_end: bool) -> None:
    page = f'<p>a</p><script type="application/json">{content}</script><script>1</script><p>b'
    elements, markup = split_page(page)
    assert (elements[0].content == content) is ends_at_its_own_end
    if ends_at_its_own_end:
        assert markup == "<p>a</p><p>b"


def test_a_name_written_as_markup_is_caught() -> None:
    name = "<b>bold</b>"
    with pytest.raises(OracleFailure, match="written as markup"):
        check_markup(f"<p>{name}</p>", name, "page")
    text, _ = check_markup("<p>&lt;b&gt;bold&lt;/b&gt;</p>", name, "page")
    assert name in text


def test_the_cases_are_the_same_for_a_seed() -> None:
    first, second = generate(5, 300), generate(5, 300)
    assert first == second
    assert {chosen.area for chosen in first} == set(AREAS)
    assert generate(6, 300) != first
