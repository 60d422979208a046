"""What zero-filling new buffers costs: a buffer's memory made with ``aligned_zeros`` (what
the CPU backend uses: ``np.zeros``, i.e. ``calloc``) against ``aligned_empty`` (the
uninitialized memory it used before), both in one run.

    python benchmarks/bench_allocation.py [--repeats 7]

Two rows per size: the allocation alone, and the allocation followed by one full write
(an upload filling the buffer, which touches every page). A large ``calloc`` maps fresh
pages that the OS zeroes on first touch, the same pages an uninitialized allocation gets,
so the ratio should stay near 1 there; a small one is a ``memset`` from the heap.
"""

from __future__ import annotations

import argparse
from functools import partial

import numpy as np
from timing import best_of, load_average, print_table

from luisa_nb.backends.base import aligned_empty, aligned_zeros

SIZES = (4 << 10, 1 << 20, 64 << 20, 1 << 30)


def allocate(make, nbytes: int, count: int) -> None:
    for _ in range(count):
        make(nbytes)


def allocate_and_write(make, nbytes: int, source: np.ndarray) -> None:
    np.copyto(make(nbytes), source)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    rows = []
    for nbytes in SIZES:
        count = max(1, (64 << 20) // nbytes)
        empty = best_of(partial(allocate, aligned_empty, nbytes, count), args.repeats) / count
        zeros = best_of(partial(allocate, aligned_zeros, nbytes, count), args.repeats) / count
        rows.append((f"{nbytes:,}", "allocate", empty * 1e6, zeros * 1e6, zeros / empty))
        source = np.ones(nbytes, np.uint8)
        empty = best_of(partial(allocate_and_write, aligned_empty, nbytes, source), args.repeats)
        zeros = best_of(partial(allocate_and_write, aligned_zeros, nbytes, source), args.repeats)
        rows.append((f"{nbytes:,}", "allocate + write", empty * 1e6, zeros * 1e6, zeros / empty))
    header = ("bytes", "what", "empty µs", "zeros µs", "zeros/empty")
    print_table(f"new buffer memory, best of {args.repeats} ({load_average()})", header, rows)


if __name__ == "__main__":
    main()
