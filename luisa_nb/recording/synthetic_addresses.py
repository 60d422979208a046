"""Synthetic host addresses, for traces that leave the process (files and exports).

A trace records where each host range lies in the process's memory, because the analysis
decides overlap by address: ``h`` and ``h.reshape(...)`` are the same memory, ``h[:512]``
and ``h[512:]`` are not. Real addresses would tell whoever reads a shared trace how the
process laid out its heap, so files and exports hold synthetic ones instead:

- ranges whose bytes overlap or touch form a cluster (a range of no bytes joins the
  cluster it lies in or touches);
- each cluster gets a base of its own, in the order the trace first touched it, one
  :data:`CLUSTER_ALIGNMENT` apart at least;
- each range keeps its offset from its cluster's lowest byte.

Overlap, containment and offsets among the trace's ranges are exactly as recorded, so a
saved trace gives the same findings; the real addresses, their order and the gaps
between clusters are gone.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence

import numpy as np

from luisa_nb.recording.records import CommandRecord, HostRange, Record

FIRST_BASE = 1 << 16
CLUSTER_ALIGNMENT = 1 << 12


def synthetic_addresses(hosts: Sequence[HostRange]) -> list[int]:
    """The synthetic address of each range of ``hosts``, listed in the order the trace
    first used them."""
    cluster_of, offsets, extents = _clusters(hosts)
    bases = list(
        itertools.accumulate(
            (_round_up(extent + 1, CLUSTER_ALIGNMENT) for extent in extents[:-1]),
            initial=FIRST_BASE,
        )
    )
    return [bases[cluster] + offset for cluster, offset in zip(cluster_of, offsets, strict=True)]


def cluster_names(hosts: Sequence[HostRange]) -> list[str]:
    """A name for each range of ``hosts`` (listed in the order the trace first used them)
    that tells what overlaps and nothing of where it lies: ``host#2`` for all of the
    second cluster of memory the trace touched, ``host#2[0:512]`` (elements of the range's
    own dtype) for part of it."""
    cluster_of, offsets, extents = _clusters(hosts)
    itemsizes = {dtype: np.dtype(dtype).itemsize for dtype in {host.dtype for host in hosts}}
    names = []
    for host, cluster, offset in zip(hosts, cluster_of, offsets, strict=True):
        name = f"host#{cluster + 1}"
        if offset or host.nbytes != extents[cluster]:
            itemsize = itemsizes[host.dtype]
            name += f"[{offset // itemsize}:{(offset + host.nbytes) // itemsize}]"
        names.append(name)
    return names


def _clusters(hosts: Sequence[HostRange]) -> tuple[list[int], list[int], list[int]]:
    """Each range's cluster (numbered in the order the trace first touched it) and offset
    from its cluster's lowest byte, and each cluster's extent in bytes. Addresses read
    from a file may not fit in 64 bits: then the arrays hold Python ints."""
    count = len(hosts)
    if not count:
        return [], [], []
    starts, ends = [host.address for host in hosts], [host.end for host in hosts]
    kind = np.int64 if min(starts) >= -(2**63) and max(ends) < 2**63 else object
    starts, ends = np.array(starts, kind), np.array(ends, kind)
    order = np.argsort(starts, kind="stable")
    sorted_starts, reach = starts[order], np.maximum.accumulate(ends[order])
    opens = np.ones(count, bool)
    opens[1:] = sorted_starts[1:] > reach[:-1]  # a range that touches its cluster joins it
    found = np.empty(count, np.int64)
    found[order] = np.cumsum(opens) - 1
    lows, highs = sorted_starts[opens], reach[np.append(opens[1:], True)]
    first_use = np.full(len(lows), count)
    np.minimum.at(first_use, found, np.arange(count))
    number = np.empty(len(lows), np.int64)
    number[np.argsort(first_use, kind="stable")] = np.arange(len(lows))
    extents = np.empty(len(lows), highs.dtype)
    extents[number] = highs - lows
    offsets = starts - lows[found]
    return number[found].tolist(), offsets.tolist(), extents.tolist()


def with_synthetic_addresses(records: Sequence[Record]) -> list[Record]:
    """``records``, each command's host range at its synthetic address (the first command
    to touch a cluster placing it first), so that an unnamed range's ``host@0x...`` shows
    no real address either. Two traces that differ only in their address spaces give
    equal lists."""
    hosts = [r.host for r in records if isinstance(r, CommandRecord) and r.host is not None]
    distinct = list({id(host): host for host in hosts}.values())
    moved = {
        id(host): dataclasses.replace(host, address=address)
        for host, address in zip(distinct, synthetic_addresses(distinct), strict=True)
    }
    return [
        dataclasses.replace(r, host=moved[id(r.host)])
        if isinstance(r, CommandRecord) and r.host is not None
        else r
        for r in records
    ]


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step
