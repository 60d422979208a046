"""One row's record is the record the whole table makes for that row."""

from __future__ import annotations

from luisa_nb.recording.table import CommandTable


def test_a_rows_record_equals_the_bulk_record(sample_trace):
    table = sample_trace.table
    bulk = table.records()
    fresh = CommandTable(table.numbers, table.objects, table.host_pieces)
    assert [fresh.record(row) for row in reversed(range(len(bulk)))] == bulk[::-1]
    assert fresh._records is None  # no row made the others
