"""A call that is wrong fails before anything is recorded."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import luisa_nb as lnb
from luisa_nb import errors


def raises_before_anything_is_recorded(
    error: type[Exception], call: Callable[[], object], *messages: str
) -> Exception:
    """``call()`` raises ``error`` (a luisa_nb error) whose message holds each of
    ``messages``, and an active trace records nothing (no command, no sync, no kernel
    build); returns the error."""
    with lnb.trace() as trace, pytest.raises(error) as raised:
        call()
    assert isinstance(raised.value, errors.LuisaNbError)
    for message in messages:
        assert message in str(raised.value)
    assert trace.records == [] and trace.compiles == []
    return raised.value
