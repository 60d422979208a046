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
from collections.abc import Sequence

from luisa_nb.recording.records import CommandRecord, HostRange, Record

FIRST_BASE = 1 << 16
CLUSTER_ALIGNMENT = 1 << 12


def synthetic_addresses(hosts: Sequence[HostRange]) -> list[int]:
    """The synthetic address of each range of ``hosts``, listed in the order the trace
    first used them."""
    by_address = sorted(range(len(hosts)), key=lambda position: hosts[position].address)
    cluster_of = [0] * len(hosts)
    lows: list[int] = []
    highs: list[int] = []
    for position in by_address:
        host = hosts[position]
        if highs and host.address <= highs[-1]:
            highs[-1] = max(highs[-1], host.end)
        else:
            lows.append(host.address)
            highs.append(host.end)
        cluster_of[position] = len(lows) - 1
    bases: dict[int, int] = {}
    free = FIRST_BASE
    for cluster in cluster_of:
        if cluster not in bases:
            bases[cluster] = free
            free += _round_up(highs[cluster] - lows[cluster] + 1, CLUSTER_ALIGNMENT)
    return [
        bases[cluster] + host.address - lows[cluster]
        for host, cluster in zip(hosts, cluster_of, strict=True)
    ]


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
