"""The memory layout of an indirect dispatch buffer, shared by the kernels that fill it
and the runtime that reads it, and the error of a ``set_kernel`` outside it.

An indirect dispatch buffer of ``capacity`` entries is ``4 + 8 * capacity`` uint32
words, laid out as LuisaCompute's CUDA backend lays out its ``LCIndirectHeader`` and
``LCIndirectDispatch``: a 16-byte header whose first word is the dispatch count, then
one 32-byte entry per dispatch holding the block size (x, y, z and a padding word), the
dispatch size (x, y, z) and the kernel id.
"""

from __future__ import annotations

from luisa_nb.errors import KernelIndexError

HEADER_WORDS = 4
ENTRY_WORDS = 8
COUNT_WORD = 0
BLOCK_SIZE_WORD = 0  # within an entry: x, y, z
PADDING_WORD = 3  # within an entry: set to 0, so that entries' bytes are deterministic
DISPATCH_SIZE_WORD = 4  # within an entry: x, y, z
KERNEL_ID_WORD = 7  # within an entry


def word_count(capacity: int) -> int:
    """The uint32 words of an indirect dispatch buffer of ``capacity`` entries."""
    return HEADER_WORDS + ENTRY_WORDS * capacity


def capacity_of(words: int) -> int:
    """The entries an indirect dispatch buffer of ``words`` uint32 words holds."""
    return (words - HEADER_WORDS) // ENTRY_WORDS


def entry_of(word: int) -> int:
    """The entry that uint32 word ``word`` (past the header) belongs to."""
    return (word - HEADER_WORDS) // ENTRY_WORDS


def entry_offset_error(
    kernel: str,
    where: str,
    line: int,
    thread: tuple[int, int, int],
    offset: int,
    capacity: int,
    buffer: str,
) -> KernelIndexError:
    """The error of a thread whose ``set_kernel`` named entry ``offset`` of an indirect
    dispatch buffer of ``capacity`` entries. Its ``index`` is the offset and its ``size``
    the capacity."""
    location = f" at {where}" if where else ""
    message = (
        f"kernel {kernel!r}: thread {thread} calls {buffer}.set_kernel with offset {offset}, "
        f"but indirect dispatch buffer {buffer!r} holds {capacity} "
        f"entr{'ies' if capacity != 1 else 'y'}{location}; the dispatch stopped. Keep offsets "
        f"in 0 <= offset < {capacity}: create the buffer with room for every entry "
        f"(IndirectDispatchBuffer(n)), or guard the call"
    )
    return KernelIndexError(
        message, kernel=kernel, line=line, thread=thread, index=offset, size=capacity, buffer=buffer
    )
