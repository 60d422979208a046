"""Commands still waiting in a command list when a trace ends: recorded as pending, said
in the words of the API they came through, left out of the next trace; an empty trace
warns. Fix hints name calls that exist in that API."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb.analysis import pending_note
from luisa_nb.errors import PendingCommandsWarning
from luisa_nb.ipython.display import TraceSummary


def _traced(code) -> tuple[object, list[str]]:
    """The trace of ``code()`` and the warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with lnb.trace() as trace:
            code()
    return trace, [str(w.message) for w in caught if w.category is PendingCommandsWarning]


@pytest.fixture
def luisa():
    import luisa_nb.luisa as luisa
    from luisa_nb.luisa import session

    session.close()
    luisa.init("cpu:submit")
    yield luisa
    luisa.synchronize()


def test_a_luisa_cell_without_execute_is_pending_and_warns(luisa):
    frame = luisa.Buffer(4, float)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        with lnb.trace() as trace:  # names buffers after this function's variables
            frame.copy_from(np.ones(4, np.float32))
    caught = [str(w.message) for w in warned if w.category is PendingCommandsWarning]
    assert len(trace.commands) == 0
    assert trace.metadata.api == "luisa_nb.luisa"
    [pending] = trace.metadata.pending
    assert (pending.kind, pending.description) == ("upload", "upload frame")
    note = (
        "the trace recorded no commands: 1 command was not executed: call "
        "luisa.synchronize() or execute() before the trace ends"
    )
    assert caught == [note]
    assert note in TraceSummary(trace, commands=False)._repr_html_()
    assert note in repr(TraceSummary(trace, commands=False))

    later, caught = _traced(luisa.synchronize)
    assert [c.id for c in later.commands] == [], "the next trace leaves the pending upload out"
    assert later.metadata.pending == [] and caught == []


def test_pending_commands_survive_save_and_load(luisa, tmp_path):
    frame = luisa.Buffer(4, float)
    trace, _ = _traced(lambda: frame.copy_from(np.ones(4, np.float32)))
    loaded = lnb.load_trace(trace.save(tmp_path / "pending.lnbtrace"))
    assert loaded.metadata.pending == trace.metadata.pending
    assert loaded.metadata.api == "luisa_nb.luisa"
    assert pending_note(loaded) == pending_note(trace)


def test_luisa_hints_name_luisa_calls(luisa):
    a, b = luisa.Buffer(4, float), luisa.Buffer(4, float)
    history = np.zeros(4, np.float32)

    def stale():
        a.copy_to(history, sync=False)
        b.copy_from(history)
        luisa.synchronize()

    trace, caught = _traced(stale)
    assert caught == []
    [hazard] = trace.hazards
    assert "luisa.synchronize()" in hazard.fix
    assert "stream.synchronize()" not in hazard.fix
    assert "staging='execute'" not in hazard.fix
    assert "luisa.init('cpu:execute')" in hazard.fix


def test_luisa_nb_hints_keep_luisa_nb_calls():
    device = lnb.create_device("cpu", staging="submit")
    a = device.create_buffer(4, np.float32, name="a")
    history = np.zeros(4, np.float32)
    stream = device.default_stream
    trace, _ = _traced(
        lambda: (
            stream.submit([a.copy_to_async(history), a.copy_from_async(history)]),
            stream.synchronize(),
        )
    )
    assert trace.metadata.api == "luisa_nb"
    [hazard] = trace.hazards
    assert "stream.synchronize()" in hazard.fix and "staging='execute'" in hazard.fix


def test_a_command_list_left_unexecuted_on_a_luisa_nb_stream():
    device = lnb.create_device("cpu")
    a = device.create_buffer(4, np.float32, name="a")
    stream = device.create_stream("work")
    trace, caught = _traced(lambda: stream.add(a.copy_from_async(np.ones(4, np.float32))))
    assert [(p.description, p.stream) for p in trace.metadata.pending] == [("upload a", "work")]
    assert caught == [
        "the trace recorded no commands: 1 command was not executed: call "
        "stream.synchronize() or stream.execute() before the trace ends"
    ]
    stream.synchronize()


def test_an_empty_trace_warns():
    trace, caught = _traced(lambda: None)
    assert trace.metadata.pending == []
    assert caught == [
        "the trace recorded no commands and no sync points: run the code that submits "
        "commands inside it"
    ]
