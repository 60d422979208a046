"""Long expressions: how deeply a kernel's expressions nest, and room to compile them.

The compiler's passes recurse once per nesting level, so ``a + a + ... + a`` with a
thousand terms needs more than Python's default recursion limit. Kernels whose
expressions nest deeper than :data:`SHALLOW_DEPTH` compile on a worker thread with a
large stack and a raised recursion limit; beyond :data:`MAX_EXPRESSION_DEPTH` (about what
CPython itself compiles under its default limit) they are rejected with advice.
"""

from __future__ import annotations

import ast
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

MAX_EXPRESSION_DEPTH = 3000
SHALLOW_DEPTH = 100  # up to this depth the passes run on the calling thread
FRAMES_PER_LEVEL = 8  # generous: the deepest pass uses about 3 frames per level
WORKER_STACK_BYTES = 512 * 2**20  # reserved address space; only the used part is touched

Result = TypeVar("Result")
_worker_lock = threading.Lock()


def deepest_expression(tree: ast.AST) -> tuple[int, ast.expr | None]:
    """The deepest nesting of expressions in ``tree`` (iteratively), and the outermost
    expression that contains it."""
    deepest, outermost = 0, None
    pending: list[tuple[ast.AST, int, ast.expr | None]] = [(tree, 0, None)]
    while pending:
        node, depth, root = pending.pop()
        if isinstance(node, ast.expr):
            depth += 1
            root = root or node
            if depth > deepest:
                deepest, outermost = depth, root
        pending.extend((child, depth, root) for child in ast.iter_child_nodes(node))
    return deepest, outermost


def call_with_room(function: Callable[[], Result], depth: int) -> Result:
    """``function()``, on a worker thread with room for ``depth`` nested levels if needed.

    The recursion limit is process-wide: it is raised only while the worker runs, and
    deep compiles run one at a time.
    """
    if depth <= SHALLOW_DEPTH:
        return function()
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["result"] = function()
        except BaseException as error:  # re-raised on the calling thread
            outcome["error"] = error

    with _worker_lock:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(limit + FRAMES_PER_LEVEL * depth)
        try:
            previous_stack = threading.stack_size(WORKER_STACK_BYTES)
            try:
                worker = threading.Thread(target=run, name="luisa_nb kernel compile")
                worker.start()
            finally:
                threading.stack_size(previous_stack)
            worker.join()
        finally:
            sys.setrecursionlimit(limit)
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["result"]  # type: ignore[return-value]
