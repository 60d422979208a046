"""Kernels with buffer atomics, written as luisa-python programs write them."""

from luisa_nb.kernels import dispatch_id


def histogram(values, counts):
    i = dispatch_id().x
    counts.atomic_fetch_add(values.read(i) % 16, 1)


def float_reductions(values, totals):
    i = dispatch_id().x
    v = values.read(i)
    totals.atomic_fetch_add(0, v)
    totals.atomic_fetch_sub(1, v)
    totals.atomic_fetch_min(2, v)
    totals.atomic_fetch_max(3, v)


def int_reductions(values, totals):
    i = dispatch_id().x
    v = values.read(i)
    totals.atomic_fetch_min(0, v)
    totals.atomic_fetch_max(1, v)
    totals.atomic_fetch_and(2, v)
    totals.atomic_fetch_or(3, v)
    totals.atomic_fetch_xor(4, v)
    totals.atomic_fetch_sub(5, v)


def old_values(cells, operands, olds):
    """Each thread changes its own cells and keeps what each atomic returned."""
    i = dispatch_id().x
    v = operands.read(i)
    base = i * 9
    olds.write(base, cells.atomic_exchange(base, v))
    olds.write(base + 1, cells.atomic_compare_exchange(base + 1, 5, v))
    olds.write(base + 2, cells.atomic_fetch_add(base + 2, v))
    olds.write(base + 3, cells.atomic_fetch_sub(base + 3, v))
    olds.write(base + 4, cells.atomic_fetch_and(base + 4, v))
    olds.write(base + 5, cells.atomic_fetch_or(base + 5, v))
    olds.write(base + 6, cells.atomic_fetch_xor(base + 6, v))
    olds.write(base + 7, cells.atomic_fetch_min(base + 7, v))
    olds.write(base + 8, cells.atomic_fetch_max(base + 8, v))


def first_claim(slot, winners):
    """Every thread tries to claim slot 0 (-1 while free); exactly one succeeds."""
    i = dispatch_id().x
    if slot.atomic_compare_exchange(0, -1, i) == -1:
        winners.atomic_fetch_add(0, 1)


def float_compare_exchange(cells):
    i = dispatch_id().x
    cells.atomic_compare_exchange(i, 0.0, 1.5)


def out_of_range(counts, n):
    i = dispatch_id().x
    counts.atomic_fetch_add(i + n, 1)


def sum_in_expression(counts, out):
    i = dispatch_id().x
    out.write(i, counts.atomic_fetch_add(0, 1) - counts.read(0) + counts.atomic_fetch_add(0, 1))
