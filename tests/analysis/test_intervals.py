"""The interval map of host addresses to their last writer."""

from hypothesis import given, settings
from hypothesis import strategies as st

from luisa_nb.analysis.intervals import IntervalMap

A, B, C = "a", "b", "c"


def test_assign_takes_over_overlapping_pieces():
    pieces = IntervalMap()
    pieces.assign(0, 100, A)
    pieces.assign(40, 60, B)
    assert pieces.query(0, 100) == [(0, 40, A), (40, 60, B), (60, 100, A)]
    pieces.assign(50, 150, C)
    assert pieces.query(0, 200) == [(0, 40, A), (40, 50, B), (50, 150, C)]


def test_query_clips_to_the_asked_range_and_skips_gaps():
    pieces = IntervalMap()
    pieces.assign(10, 20, A)
    pieces.assign(30, 40, B)
    assert pieces.query(15, 35) == [(15, 20, A), (30, 35, B)]
    assert pieces.query(20, 30) == []
    assert pieces.query(40, 50) == []


def test_remove_forgets_only_what_the_owner_still_holds():
    pieces = IntervalMap()
    pieces.assign(0, 100, A)
    pieces.assign(40, 60, B)
    pieces.remove(0, 100, A)
    assert pieces.query(0, 100) == [(40, 60, B)]
    pieces.remove(0, 100, C)
    assert pieces.query(0, 100) == [(40, 60, B)]
    pieces.remove(45, 50, B)
    assert pieces.query(0, 100) == [(40, 45, B), (50, 60, B)]
    assert len(pieces) == 2


def test_owners_are_compared_by_value():
    pieces = IntervalMap()
    pieces.assign(0, 10, 1000)
    pieces.remove(0, 10, 1001)
    assert pieces.query(0, 10) == [(0, 10, 1000)]
    pieces.remove(0, 10, int("1000"))  # equal, though another int object
    assert pieces.query(0, 10) == []


def test_exact_pieces_are_taken_over_and_removed_in_place():
    pieces = IntervalMap()
    pieces.assign(0, 10, 1)
    pieces.assign(10, 20, 2)
    pieces.assign(0, 10, 3)
    assert pieces.query(0, 20) == [(0, 10, 3), (10, 20, 2)]
    pieces.remove(10, 20, 2)
    assert pieces.query(0, 20) == [(0, 10, 3)]
    pieces.assign(5, 15, 4)
    assert pieces.query(0, 20) == [(0, 5, 3), (5, 15, 4)]


def test_empty_assign_is_ignored():
    pieces = IntervalMap()
    pieces.assign(5, 5, A)
    assert len(pieces) == 0


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["assign", "remove", "clear"]),
            st.integers(0, 40),
            st.integers(0, 40),
            st.integers(0, 3),
        ),
        max_size=40,
    )
)
@settings(max_examples=300, deadline=None)
def test_the_map_agrees_with_one_owner_per_integer(operations):
    pieces, model = IntervalMap(), {}
    for operation, a, b, owner in operations:
        start, end = min(a, b), max(a, b)
        if operation == "assign":
            pieces.assign(start, end, owner)
            model.update(dict.fromkeys(range(start, end), owner))
        elif operation == "remove":
            pieces.remove(start, end, owner)
            for point in range(start, end):
                if model.get(point) == owner:
                    del model[point]
        else:
            pieces.clear(start, end)
            for point in range(start, end):
                model.pop(point, None)
    seen = {point: owner for s, e, owner in pieces.query(0, 41) for point in range(s, e)}
    assert seen == model
    gaps = {point for s, e in pieces.gaps(0, 41) for point in range(s, e)}
    assert gaps == set(range(41)) - set(model)


def test_gaps_are_the_unowned_pieces_and_clear_forgets_a_range():
    pieces = IntervalMap()
    pieces.assign(10, 20, A)
    pieces.assign(30, 40, B)
    assert pieces.gaps(0, 50) == [(0, 10), (20, 30), (40, 50)]
    assert pieces.gaps(12, 18) == []
    pieces.clear(15, 35)
    assert pieces.query(0, 50) == [(10, 15, A), (35, 40, B)]
    assert pieces.gaps(10, 40) == [(15, 35)]


def test_a_copy_changes_apart_from_its_original():
    pieces = IntervalMap()
    pieces.assign(0, 10, A)
    copied = pieces.copy()
    copied.assign(5, 15, B)
    pieces.clear(0, 5)
    assert pieces.query(0, 20) == [(5, 10, A)]
    assert copied.query(0, 20) == [(0, 5, A), (5, 15, B)]
