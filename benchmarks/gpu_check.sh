#!/usr/bin/env bash
# The cuda backend's checks that need a GPU, in one go (under 5 minutes): a CPU-side
# preflight, the GPU tests with the CUDA codegen tests, then benchmarks/bench_cuda.py,
# which prints one table (with the test summary in its first row). Then, where real
# luisa-python can start its CUDA backend here, the seed traced on it (one JSON line),
# the luisa:cuda tests and bench_luisa_instrument.py's table on cuda; where it cannot, one
# line says why and the step is left out.
#
# Exit status: 0 when everything ran and passed; 1 when a test, a benchmark or the
# preflight failed, or a step ran out of time; 2 when there is no GPU here (CuPy missing,
# or it finds none), so nothing was checked.
set -u -o pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # this checkout's luisa_nb, installed or not

fail() {
    echo "gpu_check: FAILED: $*" >&2
    exit 1
}

# Preflight, no GPU needed: the benchmark parses its arguments and emits the CUDA source
# of its kernels, and the GPU tests are collected (a typo here should not cost a GPU run).
python benchmarks/bench_cuda.py --check || fail "bench_cuda.py --check (see above)"
collected=$(python -m pytest -q -p no:cacheprovider --collect-only -k gpu \
    tests/backends/test_cuda_device.py 2>&1 | grep -c '::test_gpu_') \
    || fail "no GPU tests collected from tests/backends/test_cuda_device.py"

if ! reason=$(python -c 'import cupy; n = cupy.cuda.runtime.getDeviceCount(); assert n, "CuPy finds no GPU"' 2>&1); then
    echo "gpu_check: no GPU here, nothing was checked: $(echo "$reason" | tail -n 1)" >&2
    echo "gpu_check: on a GPU machine: pip install -e '.[test,cuda]' && benchmarks/gpu_check.sh" >&2
    exit 2
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
timeout 180 python -m pytest -q -p no:cacheprovider -rs \
    tests/kernels/test_cuda_codegen.py tests/backends/test_cuda_device.py >"$log" 2>&1
tests_status=$?
summary=$(tail -n 1 "$log")
if [ "$tests_status" -eq 124 ]; then
    cat "$log"
    fail "the tests ran past 180 s"
fi
if [ "$tests_status" -ne 0 ]; then
    cat "$log"
fi
if grep -q '^SKIPPED' "$log"; then  # on a GPU machine with compilers, nothing may skip
    grep '^SKIPPED' "$log"
    fail "tests were skipped on a machine with a GPU ($collected GPU tests collected)"
fi

timeout 110 python benchmarks/bench_cuda.py --tests "$summary"
bench_status=$?
if [ "$bench_status" -eq 124 ]; then
    fail "bench_cuda.py ran past 110 s"
fi
luisa_status=0
clang=$(command -v clang++ || true)
export LUISA_CLANG_PATH="${LUISA_CLANG_PATH:-$clang}"
probe='from luisa_nb.runtime.luisa_backends import check_backend_starts as c; c("cuda")'
if luisa_reason=$(python -c "$probe" 2>&1); then
    echo "gpu_check: the seed on real luisa-python's cuda backend, traced:"
    timeout 60 python tests/luisa/programs/instrumented.py seed --backend cuda 2>/dev/null \
        | grep '^{"hazards"' || luisa_status=1
    timeout 120 python -m pytest -q -p no:cacheprovider -rs tests/luisa/test_luisa_cuda.py \
        || luisa_status=1
    timeout 120 python benchmarks/bench_luisa_instrument.py --backend cuda --count 1000 \
        --repeats 3 || luisa_status=1
else
    echo "gpu_check: real luisa-python cannot start cuda here, its step left out:" \
        "$(echo "$luisa_reason" | tail -n 1)"
fi

if [ "$tests_status" -ne 0 ] || [ "$bench_status" -ne 0 ] || [ "$luisa_status" -ne 0 ]; then
    fail "tests exit $tests_status ($summary), benchmark exit $bench_status," \
        "real luisa-python on cuda exit $luisa_status"
fi
echo "gpu_check: passed ($summary)"
