"""What a case checks once its operation has completed. A failed check raises
:class:`OracleFailure`, which makes the case silent; a luisa_nb error that a check lets
through makes it clean, and anything else raw."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import numpy as np

from luisa_nb.errors import LuisaNbError

from .outcomes import OracleFailure, first_line

EXPECTATIONS = ("ok", "error", "either")


def fail(message: str) -> NoReturn:
    raise OracleFailure(message)


def expect(condition: object, message: str) -> None:
    """Fail with ``message`` unless ``condition`` holds."""
    if not condition:
        raise OracleFailure(message)


def expect_equal_arrays(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    """``actual`` holds ``expected``'s values (NaN equal to NaN), in its dtype."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    same = actual.shape == expected.shape and np.array_equal(actual, expected, equal_nan=True)
    if not same:
        raise OracleFailure(
            f"{what}: got {np.array2string(actual.ravel()[:6])} ({actual.dtype}, "
            f"{actual.shape}), expected {np.array2string(expected.ravel()[:6])} "
            f"({expected.dtype}, {expected.shape})"
        )


@contextmanager
def expect_error(what: str) -> Iterator[None]:
    """The block must raise: a luisa_nb error passes through (clean), anything else too
    (raw); completing is a silent failure named by ``what``."""
    yield
    raise OracleFailure(f"{what} completed without an error")


class Attempt:
    """An operation run under an expectation (see :func:`expecting`)."""

    def __init__(self, expectation: str, what: str) -> None:
        self.expectation = expectation
        self.what = what

    def completed(self) -> None:
        """The operation returned: a case that expects an error fails here, before its
        oracle does more work (a huge buffer accepted by mistake is not filled)."""
        if self.expectation == "error":
            raise OracleFailure(f"{self.what} completed without an error")


@contextmanager
def expecting(expectation: str, what: str) -> Iterator[Attempt]:
    """Run the block as ``expectation`` says: ``"error"``, it must raise (see
    :func:`expect_error`); ``"ok"``, a luisa_nb error is a valid input refused (silent);
    ``"either"``, the block's own checks decide."""
    attempt = Attempt(expectation, what)
    if expectation == "error":
        with expect_error(what):
            yield attempt
        return
    try:
        yield attempt
    except LuisaNbError as error:
        if expectation == "ok":
            raise OracleFailure(f"{what} was refused: {first_line(error)}") from error
        raise


class UserError(Exception):
    """Raised by the user code of a case (a callback, a generator, a cell), so that the
    case can tell its own exception from one that luisa_nb raised."""
