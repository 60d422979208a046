"""What the contents panel shows of one record: each buffer the command touched, right
before it and right after it, as replay knows them (:mod:`luisa_nb.analysis.replay`).

Before is the state after the command replay applies before this one (nothing applied:
before the first); after is the state right after it. Each buffer is one
:class:`~luisa_nb.views.array_diff.ArrayDiff` of before against after (an image as
pictures), or the reason replay cannot know its bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from luisa_nb.analysis.replay import ReplayEngine, ReplayState
from luisa_nb.errors import ReplayDataMissingError
from luisa_nb.recording import CommandRecord, Trace
from luisa_nb.recording.naming import describe
from luisa_nb.recording.records import Record
from luisa_nb.views.array_diff import DEFAULT_PAGE_SIZE, ArrayDiff


@dataclass(frozen=True)
class BufferContents:
    """One buffer a command touched: ``comparison`` of its contents before against after,
    or ``None`` with ``reason`` saying why replay cannot know them."""

    buffer: int
    name: str
    comparison: ArrayDiff | None
    reason: str = ""


@dataclass(frozen=True)
class CommandContents:
    """The buffers record ``record_id`` touched, before and after it. ``before`` is the
    command replayed just before it (``None``: it came first); ``note`` says why there are
    no buffers (a sync point, a command that did not run)."""

    record_id: int
    title: str
    before: int | None
    buffers: tuple[BufferContents, ...]
    note: str = ""


def command_contents(
    trace: Trace,
    engine: ReplayEngine,
    record: Record,
    page_size: int = DEFAULT_PAGE_SIZE,
) -> CommandContents:
    """The buffers ``record`` touched before and after it, replayed by ``engine``."""
    title = describe(trace, record)
    if not isinstance(record, CommandRecord):
        return CommandContents(record.id, title, None, (), "a sync point touches no buffer")
    if record.id not in engine.command_ids:
        note = f"#{record.id} did not run ({record.status.value}): replay holds no state there"
        return CommandContents(record.id, title, None, (), note)
    before, after = engine.before(record.id), engine.state(record.id)
    since = "the start" if before.command_id is None else f"#{before.command_id}"
    names = (f"before (after {since})", f"after #{record.id}")
    buffers = []
    for buffer in dict.fromkeys(device.buffer for device in record.device_ranges):
        info = trace.buffers.get(buffer)
        if info is None:
            continue
        name = info.name or f"buffer{buffer}"
        try:
            old, new = _values(before, buffer, info.image), _values(after, buffer, info.image)
        except ReplayDataMissingError as missing:
            buffers.append(BufferContents(buffer, name, None, str(missing)))
            continue
        comparison = ArrayDiff(
            old,
            new,
            names=names,
            title=f"{name} around #{record.id}",
            page_size=page_size,
            image=info.image is not None,
        )
        buffers.append(BufferContents(buffer, name, comparison))
    return CommandContents(record.id, title, before.command_id, tuple(buffers))


def _values(state: ReplayState, buffer: int, image: tuple[int, ...] | None):
    return (state.image(buffer) if image is not None else state.buffer(buffer)).numpy()
