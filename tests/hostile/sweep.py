"""``python -m tests.hostile.sweep``: run a hostile-input sweep and print its table.

::

    python -m tests.hostile.sweep --cases 1000 --seed 1 --jobs 2 --json sweep.json
    python -m tests.hostile.sweep --area kernels --area streams --cases 200

Prints the table of outcomes per area, the load average and the seed, then every case
that was not clean with the first line of what ended it. Exits with 1 if any case was
not clean, so that it can gate a change. Run it from the repository root.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

from .cases import AREAS, generate
from .devices import backends
from .outcomes import CaseResult, Outcome
from .pool import WorkerPool
from .summary import as_json, load_average, not_clean, table


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tests.hostile.sweep", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--cases", type=int, default=1000, help="how many cases (default 1000)")
    parser.add_argument(
        "--area",
        action="append",
        choices=list(AREAS),
        help="run only this area (repeatable; default: all, the cases spread evenly)",
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of the cases (default 1)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results here")
    parser.add_argument("--list", action="store_true", help="list the cases; run none")
    parser.add_argument("--verbose", action="store_true", help="print each result as it comes")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    arguments = parse_arguments(argv)
    cases = generate(arguments.seed, arguments.cases, arguments.area or tuple(AREAS))
    if arguments.list:
        print("\n".join(chosen.key for chosen in cases))
        return 0

    def report(result: CaseResult) -> None:
        if arguments.verbose:
            print(f"{result.outcome.value:6} {result.seconds:6.2f} s  {result.key}", flush=True)

    started = time.perf_counter()
    with WorkerPool(arguments.jobs) as pool:
        results = pool.run(cases, report)
    seconds = time.perf_counter() - started
    left = pool.left_behind()
    command = "python -m tests.hostile.sweep " + shlex.join(sys.argv[1:] if argv is None else argv)
    load = load_average()
    print(table(results))
    print(
        f"\nseed {arguments.seed}, {len(results)} cases in {seconds:.0f} s on "
        f"{arguments.jobs} workers, load average {load}, backends {', '.join(backends())}"
        f"\ncommand: {command.strip()}\nprocesses left behind: {left or 'none'}"
    )
    failures = not_clean(results)
    if failures:
        print(f"\ncases that were not clean:\n{failures}")
    if arguments.json is not None:
        about = {
            "seed": arguments.seed,
            "command": command.strip(),
            "load_average": load,
            "backends": list(backends()),
            "left_behind": left,
        }
        document = as_json(results, **about, seconds=round(seconds, 1))
        arguments.json.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    return int(bool(left) or any(result.outcome is not Outcome.CLEAN for result in results))


if __name__ == "__main__":
    sys.exit(main())
