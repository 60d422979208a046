"""``print`` in a luisa-python kernel: the lines real luisa-python 0.3.7 prints
(``[DEVICE] ...``), in C and in Python mode, beside real luisa-python where it runs."""

from __future__ import annotations

from pathlib import Path

import luisa_nb.luisa as luisa
from tests.luisa.running import require_real_luisa, run_on_luisa_nb, run_on_real_luisa

PROGRAM = Path(__file__).parent / "programs" / "device_print.py"

# Measured on real luisa-python 0.3.7's CPU backend (the text after its log prefix).
EXPECTED_THREAD_1 = [
    "[DEVICE] 1",
    "[DEVICE] values -3 4294967295 1 0.1 1e+10 0.333333 -2.5 1e-07 1.23457e+08",
    "[DEVICE] 123457 true (true, false) (3, -4) (1, 2.5, 3)",
    "[DEVICE] (1, 0, 0)",
    "[DEVICE] callable 1.5 3",
]


def device_lines(output: str) -> list[str]:
    """The device lines of a program's output, without real luisa-python's log prefix."""
    return [line[line.index("[DEVICE]") :] for line in output.splitlines() if "[DEVICE]" in line]


def test_lines_are_luisa_pythons_in_both_modes(fresh_session, kernel_mode, capsys) -> None:
    run_on_luisa_nb(PROGRAM)
    lines = device_lines(capsys.readouterr().out)
    assert len(lines) == 15
    assert lines[5:10] == EXPECTED_THREAD_1
    assert lines[0] == "[DEVICE] 0" and lines[14] == "[DEVICE] callable 2.5 5"


def test_lines_match_real_luisa_python(fresh_session, capsys) -> None:
    require_real_luisa()
    real = device_lines(run_on_real_luisa(PROGRAM))
    run_on_luisa_nb(PROGRAM)
    assert device_lines(capsys.readouterr().out) == real


def test_a_dispatch_keeps_its_lines_in_the_trace(fresh_session, kernel_mode, capsys) -> None:
    import luisa_nb as lnb

    luisa.init("cpu")

    @luisa.func
    def count():
        i = dispatch_id().x  # noqa: F821 - a kernel name, found without an import
        if i % 2 == 0:
            print("even", i)

    with lnb.trace() as trace:
        count(dispatch_size=6)
        luisa.synchronize()
    dispatch = next(c for c in trace.commands if c.kind.name == "DISPATCH")
    printed = trace.printed(dispatch)
    assert [line.text for line in printed.lines] == ["even 0", "even 2", "even 4"]
    assert printed.threads == [(0, 0, 0), (2, 0, 0), (4, 0, 0)]
    assert printed.of_thread(2) == ["even 2"] and printed.of_thread((1, 0, 0)) == []
    assert printed.dropped == 0
    expected = ["[DEVICE] even 0", "[DEVICE] even 2", "[DEVICE] even 4"]
    assert device_lines(capsys.readouterr().out) == expected


def test_and_or_and_chains_evaluate_every_operand(fresh_session, kernel_mode, capsys) -> None:
    """luisa-python evaluates both operands of ``and``/``or`` and every comparison of a
    chain, so a callable there prints whatever the first operand gave."""
    luisa.init("cpu")

    @luisa.func
    def loud():
        print("called")
        return 3

    @luisa.func
    def strict():
        print(False and loud() > 1, 2 < 1 < loud())  # noqa: SIM223 - the point

    strict(dispatch_size=1)
    luisa.synchronize()
    lines = device_lines(capsys.readouterr().out)
    assert lines == ["[DEVICE] called", "[DEVICE] called", "[DEVICE] false false"]
