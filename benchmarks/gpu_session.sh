#!/usr/bin/env bash
# Every check of the cuda backend that needs a GPU, in one call of a GPU machine that has
# no network, and the results file that records them.
#
#   benchmarks/gpu_session.sh wheels     where PyPI is reachable, beforehand
#   benchmarks/gpu_session.sh run DIR    on the GPU machine, in this checkout
#
# `wheels` downloads into .whl/ the wheels, for Python $WHEEL_PYTHON (3.12 unless set), of
# what the checks need beyond a CUDA image's NumPy, CuPy, pytest, pytest-xdist,
# pytest-timeout, hypothesis, xxhash and setuptools: platformdirs, pyzmq (the remote
# backend of the hostile-input cases) and IPython (their notebook cases).
#
# `run` installs .whl/, where it exists, into a folder it puts on PYTHONPATH, builds the C
# extensions in place, then runs these steps, each under its own time limit, in about
# 8 minutes at most:
#   gpu_check    benchmarks/gpu_check.sh: the GPU tests (the seed under both staging
#                policies among them) and the table of benchmarks/bench_cuda.py
#   conformance  the conformance suite on cuda
#   seed         `luisa-nb demo --backend cuda` under staging submit, then execute
#   hostile      the hostile-input cases, which run on cuda where it loads
# After each step it writes DIR/<gpu>.md (h200.md on an NVIDIA H200): the date, the GPU,
# its driver, CuPy, NVRTC and Python, the command, each step's exit status and seconds,
# and the end of each step's output; DIR/<step>.log holds each whole log. A call cut off
# by its time limit still leaves the steps done so far there.
#
# Exit status: 0 when every step passed; 1 when one failed or ran out of time, or a
# package is missing; 2 when there is no GPU here, so nothing was checked.
set -u -o pipefail
cd "$(dirname "$0")/.."

usage() {
    echo "usage: benchmarks/gpu_session.sh wheels | run DIR" >&2
    exit 2
}

download_wheels() {
    python3 -m pip download -q --only-binary=:all: --implementation cp \
        --python-version "${WHEEL_PYTHON:-3.12}" --platform manylinux_2_28_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        -d .whl platformdirs pyzmq ipython
    echo "gpu_session: $(ls .whl | wc -l) wheels in .whl/ ($(du -sh .whl | cut -f1));" \
        "carry .whl to the GPU machine"
}

[ $# -ge 1 ] || usage
case "$1" in
wheels)
    download_wheels
    exit
    ;;
run)
    [ $# -eq 2 ] || usage
    out=$2
    ;;
*) usage ;;
esac

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# `python` is the python3 that holds CuPy, for gpu_check.sh and the tests' subprocesses
ln -s "$(command -v python3)" "$scratch/python"
export PATH="$scratch:$PATH"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if [ -d .whl ]; then
    python -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
        --target "$scratch/site" .whl/*.whl || exit 1
    export PYTHONPATH="$PYTHONPATH:$scratch/site"  # before the image's site-packages
fi
if ! reason=$(python -c 'import cupy; assert cupy.cuda.runtime.getDeviceCount(), "CuPy finds no GPU"' 2>&1); then
    echo "gpu_session: no GPU here, nothing was checked: $(echo "$reason" | tail -n 1)" >&2
    exit 2
fi
if ! missing=$(python -c 'import IPython, numpy, platformdirs, pytest, xdist, xxhash, zmq' 2>&1); then
    echo "gpu_session: a package is missing: $(echo "$missing" | tail -n 1);" \
        "run 'benchmarks/gpu_session.sh wheels' where PyPI is reachable and carry .whl" >&2
    exit 1
fi

mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
started=$(date -u '+%Y-%m-%d %H:%M UTC')
python setup.py -q build_ext --inplace >"$out/build.log" 2>&1
export LUISA_CLANG_PATH="${LUISA_CLANG_PATH:-$(command -v clang++ || true)}"
describe() {  # one line: the GPU's name|its memory, capability and driver|versions
    python - <<'PYTHON'
import platform

import cupy

from luisa_nb.kernels.cuda.nvrtc import nvrtc_version

properties = cupy.cuda.runtime.getDeviceProperties(0)
driver = cupy.cuda.runtime.driverGetVersion()
try:
    from luisa_nb.recording import _row_appender  # noqa: F401
except ImportError as error:
    native = f"not built ({error}; see build.log)"
else:
    native = "built"
nvrtc = ".".join(map(str, nvrtc_version()))
details = (
    f"{properties['totalGlobalMem'] >> 20} MiB, compute capability "
    f"{properties['major']}.{properties['minor']}, CUDA driver {driver // 1000}.{driver % 1000 // 10}"
)
versions = f"CuPy {cupy.__version__}, NVRTC {nvrtc}, Python {platform.python_version()}"
print(f"{properties['name'].decode()}|{details}|{versions}, C extensions {native}")
PYTHON
}
IFS='|' read -r gpu gpu_details versions < <(describe 2>>"$out/build.log")
gpu=${gpu:-unknown GPU}
slug=$(echo "$gpu" | grep -o -i -E '[A-Z]+[0-9]{2,}[A-Z]*' | tail -n 1 | tr 'A-Z' 'a-z')
results="$out/${slug:-gpu}.md"
steps=()

write_results() {
    {
        echo "# The cuda backend on $gpu"
        echo
        echo "- date: $started"
        echo "- GPU: $gpu, ${gpu_details:-details unknown}"
        echo "- ${versions:-versions unknown}"
        echo "- command: \`benchmarks/gpu_session.sh run DIR\` on the GPU machine, after" \
            "\`benchmarks/gpu_session.sh wheels\` where PyPI is reachable"
        echo
        echo "| step | exit status | seconds |"
        echo "| --- | --- | --- |"
        printf '%s\n' "${steps[@]}"
        local name
        for name in "${names[@]}"; do
            echo
            echo "## $name"
            echo
            echo '```text'
            tail -n 60 "$out/$name.log"
            echo '```'
        done
    } >"$results"
}

names=()
failed=0
step() {  # step NAME SECONDS COMMAND...: run COMMAND under a time limit, log and record it
    local name=$1 limit=$2 begin status
    shift 2
    begin=$SECONDS
    timeout "$limit" "$@" >"$out/$name.log" 2>&1
    status=$?
    [ "$status" -eq 124 ] && echo "(stopped at its limit of $limit s)" >>"$out/$name.log"
    [ "$status" -eq 0 ] || failed=1
    names+=("$name")
    steps+=("| $name | $status | $((SECONDS - begin)) |")
    write_results
    echo "gpu_session: $name exit $status in $((SECONDS - begin)) s"
}

plugin=(-p luisa_nb.pytest_plugin)  # unless luisa_nb is installed, with its entry point
entry_point='import importlib.metadata as m; exit(all(e.name != "luisa_nb" for e in m.entry_points(group="pytest11")))'
python -c "$entry_point" && plugin=()

step gpu_check 330 bash benchmarks/gpu_check.sh
step conformance 60 python -m pytest -q -p no:cacheprovider "${plugin[@]}" -rs \
    --pyargs luisa_nb.conformance --luisa-backend cuda
step seed 30 bash -c 'for staging in submit execute; do
    python -m luisa_nb.cli demo --backend cuda --staging "$staging" || exit; done'
step hostile 90 python -m pytest -q -p no:cacheprovider -n 4 -rf tests/hostile
echo "gpu_session: results in $results"
exit "$failed"
