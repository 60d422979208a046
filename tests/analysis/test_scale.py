"""100k records analyse in well under a few seconds (no timing assertion: just counts)."""

import numpy as np

from luisa_nb.analysis import HazardKind, find_hazards
from luisa_nb.recording import Access, CommandKind, SyncKind

STREAMS = 4
ROUNDS = 8000
SYNC_EVERY = 8
SHARE_EVERY = 16


def build_large_trace(builder):
    """Each stream loops upload -> dispatch -> download on its own buffer and host array,
    synchronizing every 8th round; every 16th round the next stream reads the buffer
    between a signal/wait pair each way. Returns the trace and its expected latent count.
    """
    buffers = [builder.buffer(f"b{s}") for s in range(STREAMS)]
    hosts = [np.zeros(1024, np.float32) for _ in range(STREAMS)]
    for s in range(STREAMS):
        builder.stream(f"s{s}")
    ranges = [builder.host(array, f"h{s}") for s, array in enumerate(hosts)]
    latent = 0
    event = 0
    for round_index in range(ROUNDS):
        for s in range(STREAMS):
            buffer, host = buffers[s], ranges[s]
            builder.command(
                CommandKind.UPLOAD, [builder.whole(buffer, Access.WRITE)], stream=s, host=host
            )
            latent += round_index > 0 and (round_index - 1) % SYNC_EVERY != SYNC_EVERY - 1
            rw = [builder.whole(buffer, Access.READ_WRITE)]
            builder.command(CommandKind.DISPATCH, rw, stream=s, label="step")
            download = builder.command(
                CommandKind.DOWNLOAD, [builder.whole(buffer, Access.READ)], stream=s, host=host
            )
            if round_index % SHARE_EVERY == 0:
                other = (s + 1) % STREAMS
                event += 2
                builder.sync(SyncKind.SIGNAL, s, event=event)
                builder.sync(SyncKind.WAIT, other, event=event)
                reads = [builder.whole(buffer, Access.READ)]
                builder.command(CommandKind.DISPATCH, reads, stream=other, label="peek")
                builder.sync(SyncKind.SIGNAL, other, event=event + 1)
                builder.sync(SyncKind.WAIT, s, event=event + 1)
            if round_index % SYNC_EVERY == SYNC_EVERY - 1:
                builder.sync(SyncKind.SYNCHRONIZE, s, covers=download.seq)
    return builder.trace, latent


def test_a_hundred_thousand_records(make_builder):
    trace, latent = build_large_trace(make_builder(capture="none"))
    assert len(trace.records) > 100_000
    hazards = find_hazards(trace)
    assert {h.kind for h in hazards} == {HazardKind.LATENT_STALE_UPLOAD}
    assert len(hazards) == latent
