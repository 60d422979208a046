"""Trace files: lossless round trip, a TraceFormatError for every kind of bad file, and
atomic saves."""

import errno
import io
import json
import os
import stat
import zipfile
from pathlib import Path

import numpy as np
import pytest

from luisa_nb.errors import TraceFormatError
from luisa_nb.recording import Access, CommandKind, HostRange, Status, Trace
from luisa_nb.recording.storage import FORMAT, VERSION
from luisa_nb.recording.synthetic_addresses import with_synthetic_addresses

from .v1_files import save_v1


def same_records(loaded, original):
    """Equal records, host ranges compared up to their address space (files hold
    synthetic addresses)."""
    return with_synthetic_addresses(loaded.records) == with_synthetic_addresses(original.records)


def test_round_trip_is_lossless(sample_trace, tmp_path):
    path = sample_trace.save(tmp_path / "sample.lnbtrace")
    loaded = Trace.load(path)
    assert type(loaded) is Trace
    assert same_records(loaded, sample_trace)
    assert loaded.buffers == sample_trace.buffers
    assert loaded.streams == sample_trace.streams
    assert loaded.metadata == sample_trace.metadata
    assert loaded.blobs.keys() == sample_trace.blobs.keys()
    for key, data in sample_trace.blobs.items():
        assert loaded.blobs[key].dtype == np.uint8
        assert loaded.blobs[key].tobytes() == data.tobytes()


def test_loaded_records_have_their_types_back(sample_trace, tmp_path):
    loaded = Trace.load(sample_trace.save(tmp_path / "sample.lnbtrace"))
    download = loaded.command(3)
    assert download.kind is CommandKind.DOWNLOAD
    assert download.device_ranges[0].access is Access.READ
    assert isinstance(download.host, HostRange) and download.host.shape == (4, 4)
    assert loaded.command(4).status is Status.FAILED and loaded.command(4).finished is None
    assert loaded.metadata.devices[0]["threads"] == 4


def test_captured_bytes_survive_save(sample_trace, tmp_path):
    upload = sample_trace.command(1)
    sample_trace.save(tmp_path / "sample.lnbtrace")
    assert upload.data_capture.blob in sample_trace.blobs
    loaded = Trace.load(tmp_path / "sample.lnbtrace")
    values = loaded.captured_values(loaded.command(1).data_capture, loaded.command(1).host)
    np.testing.assert_array_equal(values, np.full(64, 124.0, np.float32))
    assert loaded.command(1).data_capture.digest != loaded.command(1).enqueue_capture.digest


def test_document_is_versioned_json_and_commands_are_columns(sample_trace, tmp_path):
    path = sample_trace.save(tmp_path / "sample.lnbtrace")
    with zipfile.ZipFile(path) as archive:
        document = json.loads(archive.read("trace.json"))
        names = set(archive.namelist())
        ids = np.load(io.BytesIO(archive.read("commands/id.npy")))
        kinds = np.load(io.BytesIO(archive.read("syncs/kind.npy")))
    assert (document["format"], document["version"]) == (FORMAT, VERSION)
    assert document["counts"] == {"commands": 5, "syncs": 5}
    assert ids.tolist() == [record.id for record in sample_trace.commands]
    assert len(kinds) == 5
    assert {"trace.json", "keys.npy", "blobs/data.npy", "commands/seq.npy"} <= names
    assert document["labels"] == ["", "vecadd"]


def test_version_1_files_still_load(sample_trace, tmp_path):
    loaded = Trace.load(save_v1(sample_trace, tmp_path / "old.lnbtrace"))
    assert loaded.records == sample_trace.records  # real addresses, as version 1 kept them
    assert loaded.blobs.keys() == sample_trace.blobs.keys()
    resaved = Trace.load(loaded.save(tmp_path / "new.lnbtrace"))
    assert same_records(resaved, sample_trace)


# -- bad files ---------------------------------------------------------------------------


def rewrite(path, edit_document=None, drop=(), replace=None):
    """Rewrite the zip at ``path``: edit trace.json, drop or replace members."""
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    members.update(replace or {})
    if edit_document is not None:
        document = json.loads(members["trace.json"])
        edit_document(document)
        members["trace.json"] = json.dumps(document).encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            if name not in drop:
                archive.writestr(name, data)


@pytest.fixture
def saved(sample_trace, tmp_path):
    return sample_trace.save(tmp_path / "sample.lnbtrace")


@pytest.fixture
def saved_v1(sample_trace, tmp_path):
    return save_v1(sample_trace, tmp_path / "sample-v1.lnbtrace")


def npy_bytes(array: np.ndarray) -> bytes:
    stream = io.BytesIO()
    np.save(stream, array, allow_pickle=array.dtype.hasobject)
    return stream.getvalue()


def test_not_a_zip(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello")
    with pytest.raises(TraceFormatError, match=r"cannot be read as a zip file \(File is not a zip"):
        Trace.load(path)


def test_zip_without_trace_json(tmp_path):
    path = tmp_path / "other.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("readme.txt", "hi")
    with pytest.raises(TraceFormatError, match=r"holds no trace\.json"):
        Trace.load(path)


def test_trace_json_that_is_not_json(saved):
    rewrite(saved, replace={"trace.json": b"{not json"})
    with pytest.raises(TraceFormatError, match=r"trace\.json is not valid JSON"):
        Trace.load(saved)


def test_wrong_format(saved):
    rewrite(saved, lambda document: document.update(format="something.else"))
    with pytest.raises(TraceFormatError, match=r"format 'something\.else', not 'luisa_nb\.trace'"):
        Trace.load(saved)


def test_newer_version(saved):
    rewrite(saved, lambda document: document.update(version=VERSION + 1))
    with pytest.raises(TraceFormatError, match=rf"version {VERSION + 1} trace.*upgrade luisa_nb"):
        Trace.load(saved)


def test_invalid_version(saved):
    rewrite(saved, lambda document: document.update(version="1"))
    with pytest.raises(TraceFormatError, match="version '1' is not a valid version"):
        Trace.load(saved)


def test_unknown_record_type(saved_v1):
    rewrite(saved_v1, lambda document: document["records"][0].update(type="barrier"))
    with pytest.raises(TraceFormatError, match=r"records\[0\] has unknown record type 'barrier'"):
        Trace.load(saved_v1)


def test_unknown_record_field(saved_v1):
    rewrite(saved_v1, lambda document: document["records"][1].update(priority=3))
    with pytest.raises(TraceFormatError, match=r"records\[1\] has unknown field\(s\) 'priority'"):
        Trace.load(saved_v1)


def test_unknown_nested_field(saved_v1):
    def edit(document):
        document["records"][0]["host"]["pitch"] = 4

    rewrite(saved_v1, edit)
    with pytest.raises(TraceFormatError, match=r"records\[0\].host has unknown field\(s\) 'pitch'"):
        Trace.load(saved_v1)


def test_missing_record_field(saved_v1):
    rewrite(saved_v1, lambda document: document["records"][0].pop("kind"))
    with pytest.raises(TraceFormatError, match="lacks field 'kind' of CommandRecord"):
        Trace.load(saved_v1)


def test_bad_enum_value(saved_v1):
    rewrite(saved_v1, lambda document: document["records"][0].update(kind="teleport"))
    with pytest.raises(TraceFormatError, match=r"records\[0\]\.kind is 'teleport', not one of"):
        Trace.load(saved_v1)


def test_wrong_field_type(saved_v1):
    rewrite(saved_v1, lambda document: document["records"][0].update(seq="first"))
    with pytest.raises(TraceFormatError, match=r"records\[0\]\.seq holds 'first' where int is"):
        Trace.load(saved_v1)


def test_missing_top_level_field(saved):
    rewrite(saved, lambda document: document.pop("streams"))
    with pytest.raises(TraceFormatError, match=r"trace\.json lacks field\(s\) 'streams'"):
        Trace.load(saved)


def test_missing_blob(saved):
    rewrite(
        saved,
        replace={
            "blobs/data.npy": npy_bytes(np.zeros(0, np.uint8)),
            "blobs/starts.npy": npy_bytes(np.zeros(1, np.int64)),
            "blobs/keys.npy": npy_bytes(np.zeros(0, np.int64)),
        },
    )
    with pytest.raises(
        TraceFormatError, match=r"command #1 refers to blob '[0-9a-f]+', which the file does not"
    ):
        Trace.load(saved)


def test_missing_blob_in_version_1(saved_v1, sample_trace):
    blob = sample_trace.command(1).data_capture.blob
    rewrite(saved_v1, drop={f"blobs/{blob}.npy"})
    with pytest.raises(TraceFormatError, match=f"command #1 refers to blob '{blob}'"):
        Trace.load(saved_v1)


def test_pickled_column_is_refused(saved):
    rewrite(saved, replace={"commands/id.npy": npy_bytes(np.array([{"a": 1}] * 5, object))})
    with pytest.raises(TraceFormatError, match=r"commands/id\.npy holds Python objects \(pickled"):
        Trace.load(saved)


def test_pickled_blob_in_version_1_is_refused(saved_v1):
    with zipfile.ZipFile(saved_v1, "a") as archive:
        archive.writestr("blobs/evil.npy", npy_bytes(np.array([{"a": 1}], dtype=object)))
    with pytest.raises(TraceFormatError, match=r"blobs/evil\.npy holds Python objects \(pickled"):
        Trace.load(saved_v1)


def test_blob_data_that_is_not_bytes_is_refused(saved):
    rewrite(saved, replace={"blobs/data.npy": npy_bytes(np.zeros(4, np.float64))})
    with pytest.raises(TraceFormatError, match=r"blobs/data\.npy holds float64 values, not"):
        Trace.load(saved)


@pytest.mark.parametrize(
    ("entry", "array", "message"),
    [
        ("commands/seq.npy", np.arange(4), r"commands/seq\.npy holds 4 values, not 5"),
        (
            "commands/kind.npy",
            np.full(5, 9),
            r"commands/kind\.npy refers to item 9 of a table of 5",
        ),
        ("commands/label.npy", np.full(5, -1), r"commands/label\.npy refers to item -1 of a table"),
        ("commands/host.npy", np.full(5, 7), r"commands/host\.npy refers to item 7 of a table of"),
        ("ranges/set_starts.npy", np.array([0, 9]), r"set_starts\.npy does not split"),
        ("syncs/status.npy", np.full(5, -3), r"syncs/status\.npy refers to item -3"),
        ("commands/id.npy", np.zeros(5, np.float32), r"commands/id\.npy holds float32 values"),
        ("keys.npy", np.zeros(3, np.int64), r"keys\.npy holds int64, not byte strings"),
    ],
)
def test_a_bad_column_is_refused_naming_it(saved, entry, array, message):
    rewrite(saved, replace={entry: npy_bytes(array.astype(array.dtype))})
    with pytest.raises(TraceFormatError, match=message):
        Trace.load(saved)


def test_a_missing_column_is_refused_naming_it(saved):
    rewrite(saved, drop={"commands/status.npy"})
    with pytest.raises(TraceFormatError, match=r"lacks the zip entry 'commands/status\.npy'"):
        Trace.load(saved)


def test_bad_capture_policy_in_metadata(saved):
    rewrite(saved, lambda document: document["metadata"].update(capture="everything"))
    with pytest.raises(TraceFormatError, match="metadata: capture='everything'"):
        Trace.load(saved)


# -- atomic saving ---------------------------------------------------------------------------


def folder_listing(folder):
    return sorted(path.name for path in folder.iterdir())


def test_a_save_failing_half_way_leaves_the_old_file_and_no_temporary(
    sample_trace, tmp_path, monkeypatch
):
    path = sample_trace.save(tmp_path / "sample.lnbtrace")
    before = path.read_bytes()
    listings = []
    open_entry = zipfile.ZipFile.open

    def open_then_fail(archive, name, mode="r", **options):
        if mode == "w":
            listings.append(folder_listing(tmp_path))
            if len(listings) == 3:
                raise OSError(errno.ENOSPC, "No space left on device")
        return open_entry(archive, name, mode, **options)

    monkeypatch.setattr(zipfile.ZipFile, "open", open_then_fail)
    with pytest.raises(OSError, match="No space left"):
        sample_trace.save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert folder_listing(tmp_path) == ["sample.lnbtrace"]
    assert same_records(Trace.load(path), sample_trace)
    temporaries = [name for name in listings[-1] if name.endswith(".tmp")]
    assert temporaries, "the save failed before writing anything, not half-way"


@pytest.mark.parametrize("failure", ["metadata", "blob"])
def test_a_save_failing_at_once_leaves_no_file(sample_trace, tmp_path, monkeypatch, failure):
    if failure == "metadata":
        monkeypatch.setattr(sample_trace.metadata, "devices", [{"name": object()}])
        expected = (TypeError, "not JSON serializable")
    else:
        monkeypatch.setitem(sample_trace.blobs, "zz", np.array([object()], dtype=object))
        expected = (TypeError, "array of references")
    with pytest.raises(expected[0], match=expected[1]):
        sample_trace.save(tmp_path / "sample.lnbtrace")
    assert folder_listing(tmp_path) == []


def test_save_syncs_the_new_file_before_renaming_it_over_the_old(
    sample_trace, tmp_path, monkeypatch
):
    path = sample_trace.save(tmp_path / "sample.lnbtrace")
    events = []
    sync, rename = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda descriptor: (events.append("fsync"), sync(descriptor)))
    monkeypatch.setattr(
        os, "replace", lambda old, new: (events.append((Path(old), Path(new))), rename(old, new))
    )
    sample_trace.save(path)
    renames = [event for event in events if event != "fsync"]
    assert len(renames) == 1 and events.index("fsync") < events.index(renames[0])
    temporary, target = renames[0]
    assert target == path and temporary.parent == path.parent
    assert temporary.name.startswith(".sample.lnbtrace.") and temporary.name.endswith(".tmp")


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_save_gives_new_files_the_umask_mode_and_keeps_an_old_files_mode(sample_trace, tmp_path):
    path = sample_trace.save(tmp_path / "sample.lnbtrace")
    reference = tmp_path / "reference"
    reference.write_bytes(b"")
    assert stat.S_IMODE(path.stat().st_mode) == stat.S_IMODE(reference.stat().st_mode)
    path.chmod(0o640)
    sample_trace.save(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
