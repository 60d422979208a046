"""Version 1 trace files, as luisa_nb wrote them before columns: every record a JSON
object in trace.json, every blob a ``blobs/<key>.npy`` entry."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np

from luisa_nb.recording import Trace
from luisa_nb.recording.records import CommandRecord, record_to_dict
from luisa_nb.recording.storage import FORMAT


def save_v1(trace: Trace, path: Path) -> Path:
    records = [
        {"type": "command" if isinstance(record, CommandRecord) else "sync",
         **record_to_dict(record)}
        for record in trace.records
    ]  # fmt: skip
    document = {
        "format": FORMAT,
        "version": 1,
        "metadata": record_to_dict(trace.metadata),
        "buffers": [record_to_dict(info) for info in trace.buffers.values()],
        "streams": [record_to_dict(info) for info in trace.streams.values()],
        "records": records,
    }
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("trace.json", json.dumps(document))
        for key, data in trace.blobs.items():
            stream = io.BytesIO()
            np.save(stream, data, allow_pickle=False)
            archive.writestr(f"blobs/{key}.npy", stream.getvalue())
    return path
