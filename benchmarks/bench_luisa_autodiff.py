"""Differentiating in a kernel: luisa_nb beside real luisa-python, in one run.

    python benchmarks/bench_luisa_autodiff.py [--threads 4194304] [--repeats 5]

Runs benchmarks/luisa_autodiff.py (a `with autodiff():` block per thread: a float and a
float3 input, transcendental functions, a branch, length and dot) unchanged on real
luisa-python's CPU backend and on luisa_nb's `cpu`, each in its own process, as
bench_luisa_programs.py does (same columns; the checksums agree to float32 rounding).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench_luisa_programs import compare

PROGRAM = Path(__file__).with_name("luisa_autodiff.py")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=1 << 22)
    parser.add_argument("--repeats", type=int, default=5)
    arguments = parser.parse_args()
    compare(
        f"autodiff block, {arguments.threads} threads",
        PROGRAM,
        [str(arguments.threads), str(arguments.repeats)],
    )


if __name__ == "__main__":
    main()
