"""Process checks through /proc, shared by the remote and sweep tests."""

import time


def running(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (an ended process that its
    parent has not collected yet)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        # A process that exits while its entry is read gives ESRCH, not ENOENT.
        return False
    return state != "Z"


def wait_gone(pid: int, seconds: float = 5.0) -> bool:
    """Wait up to ``seconds`` for process ``pid`` to end; whether it did."""
    deadline = time.monotonic() + seconds
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not running(pid)
