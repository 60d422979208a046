"""Where values come from, so that generated programs keep "went stale" decidable by bytes.

"An upload went stale" is judged by its bytes, and the analysis by *when* host memory
was read and written; the two agree as long as no download writes a host element a value
it has held before (then an early read could send the right bytes by accident). Program
builders keep that true in every run, stale or not, by tracking where values come from:
each element carries the set of origins its value may derive from (a host element, a
buffer's first contents, a fill), uploads carry every origin their host elements have
ever held, and a download is only issued when the origins of what it writes and of
everything its target held so far are disjoint. Values from different origins are
distinct random ``float32`` numbers, equal only by a coincidence of about one in 2**23.
"""

from __future__ import annotations

from luisa_nb.conformance.program import ArraySpec, HostSlice, View

Origin = tuple[str, str, int]


class Origins:
    """The origins of every buffer element (what it may derive from now) and of every
    host element (everything it has ever held)."""

    def __init__(self, buffers: tuple[ArraySpec, ...], hosts: tuple[ArraySpec, ...]) -> None:
        self.device: dict[str, list[frozenset[Origin]]] = {
            spec.name: [frozenset({("buffer", spec.name, i)}) for i in range(spec.size)]
            for spec in buffers
        }
        self.host: dict[str, list[set[Origin]]] = {
            spec.name: [{("host", spec.name, i)} for i in range(spec.size)] for spec in hosts
        }
        self.fills = 0

    def get(self, view: View) -> list[frozenset[Origin]]:
        return self.device[view.buffer][view.start : view.stop]

    def set(self, view: View, origins: list[frozenset[Origin]]) -> None:
        self.device[view.buffer][view.start : view.stop] = origins

    def upload(self, target: View, source: HostSlice) -> None:
        held = self.host[source.array][source.start : source.stop]
        self.set(target, [frozenset(origins) for origins in held])

    def copy(self, source: View, target: View) -> None:
        self.set(target, self.get(source))

    def fill(self, target: View) -> None:
        self.fills += 1
        self.set(target, [frozenset({("fill", "", self.fills)})] * target.size)

    def vecadd(self, out: View, a: View, b: View) -> None:
        self.set(out, [x | y for x, y in zip(self.get(a), self.get(b), strict=True)])

    def may_download(self, source: View, target: HostSlice) -> bool:
        """Whether what ``source`` holds shares no origin with anything ``target`` held."""
        held = self.host[target.array][target.start : target.stop]
        return all(new.isdisjoint(old) for new, old in zip(self.get(source), held, strict=True))

    def download(self, source: View, target: HostSlice) -> None:
        held = self.host[target.array][target.start : target.stop]
        for new, old in zip(self.get(source), held, strict=True):
            old |= new
