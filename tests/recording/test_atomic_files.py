"""Files written atomically: replaced only when the write succeeds."""

import pytest

from luisa_nb.recording.atomic_files import atomic_write


def test_atomic_write_replaces_only_on_success(tmp_path):
    target = tmp_path / "file.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError, match="half-way"), atomic_write(target) as file:
        file.write(b"new but unfinished")
        raise RuntimeError("half-way")
    assert target.read_bytes() == b"old" and sorted(tmp_path.iterdir()) == [target]
    with atomic_write(target) as file:
        file.write(b"new")
    assert target.read_bytes() == b"new" and sorted(tmp_path.iterdir()) == [target]
