#!/usr/bin/env bash
# The cuda backend's checks that need a GPU: its GPU tests, then benchmarks/bench_cuda.py,
# which prints one table (with the test summary in its first row). Without CuPy or a GPU
# it says so and exits 0. Meant to finish in under 5 minutes.
set -u
cd "$(dirname "$0")/.."

if ! python -c 'import cupy, sys; sys.exit(cupy.cuda.runtime.getDeviceCount() == 0)' \
    >/dev/null 2>&1; then
    echo "gpu_check: no GPU here (CuPy is missing, or it finds no GPU); nothing to run."
    echo "gpu_check: on a GPU machine: pip install -e '.[test,cuda]' && benchmarks/gpu_check.sh"
    exit 0
fi

log=$(mktemp)
timeout 200 python -m pytest -q -p no:cacheprovider -k gpu \
    tests/backends/test_cuda_device.py >"$log" 2>&1
tests_status=$?
summary=$(tail -n 1 "$log")
if [ "$tests_status" -ne 0 ]; then
    cat "$log"
fi
rm -f "$log"

timeout 95 python benchmarks/bench_cuda.py --tests "$summary"
bench_status=$?
if [ "$tests_status" -ne 0 ] || [ "$bench_status" -ne 0 ]; then
    echo "gpu_check: failed (tests exit $tests_status, benchmark exit $bench_status)"
    exit 1
fi
