"""The seed program as ``luisa_nb.seed.run_seed`` writes it (kernel with captured buffers)."""

from __future__ import annotations

import numpy as np
import pytest

from luisa_nb.analysis import HazardKind
from luisa_nb.seed import expected_rows, run_seed


def test_seed(luisa_device):
    run = run_seed(luisa_device, capture="full")
    trace = run.trace
    expected = expected_rows(run.x.size)
    first, second = (check.command_id for check in trace.uploads)
    stale = {check.command_id for check in trace.uploads if check.stale}
    hazards = [h for h in trace.hazards if h.kind is HazardKind.STALE_UPLOAD]
    named = {hazard.command_ids[-1] for hazard in hazards}
    words = "".join(f"\n  {hazard}" for hazard in hazards) or " none"
    where = f"backend {luisa_device.name!r} (staging={luisa_device.staging!r})"
    if not np.array_equal(run.z_data, expected):
        pytest.fail(f"{where}: z_data is not x + y after the download", pytrace=False)
    if luisa_device.staging == "execute" and stale:
        pytest.fail(f"{where}: uploads #{sorted(stale)} went stale; hazards:{words}", pytrace=False)
    if stale != named:
        pytest.fail(
            f"{where}: uploads #{sorted(stale)} went stale but the analysis names "
            f"#{sorted(named)}; hazards:{words}",
            pytrace=False,
        )
    sent = trace.upload(second).staged
    if not np.array_equal(run.x, sent):
        pytest.fail(f"{where}: x holds neither what upload #{second} sent nor x + y", pytrace=False)
    assert first not in stale
