#!/usr/bin/env bash
# One GPU check, in one command (<= 8 minutes on one GPU):
#   1. install this checkout without dependencies (no network needed: JAX with CUDA, optax,
#      scikit-learn, scipy and pytest must already be there);
#   2. print the device;
#   3. run the test suite's GPU-relevant part: float32 paths, sharding, the large-data paths
#      (blockwise losses, neighbour search, minibatches, LMNN's active set);
#   4. run the scale matrix: NCA and LMNN at 1 000 000 x 64, every other method at 200 000 x 32;
#   5. write a JSON summary (device, date, test outcome, the matrix) and the Markdown table.
#
#   bash benchmarks/gpu_check.sh                  # on a machine with an NVIDIA GPU
#   bash benchmarks/gpu_check.sh --cpu-smoke      # the same plumbing on a CPU at tiny sizes (the
#                                                 # test suite runs this, so the script cannot rot)
#   bash benchmarks/gpu_check.sh --out DIR        # where the results go (default: $OUT, else
#                                                 # benchmarks/results/gpu_check)
# Environment: PYTHON (default python3), GPU_CHECK_BUDGET (seconds, default 470).
set -uo pipefail
cd "$(dirname "$0")/.."

smoke=0
outdir=${OUT:-benchmarks/results/gpu_check}
while [ $# -gt 0 ]; do
    case $1 in
        --cpu-smoke) smoke=1 ;;
        --out) outdir=$2; shift ;;
        --out=*) outdir=${1#--out=} ;;
        *) echo "gpu_check.sh: unknown argument $1 (use --cpu-smoke, --out DIR)" >&2; exit 2 ;;
    esac
    shift
done
py=${PYTHON:-python3}
budget=${GPU_CHECK_BUDGET:-450}
start=$(date +%s)
elapsed() { echo $(($(date +%s) - start)); }
mkdir -p "$outdir"

# the GPU-relevant part of the suite: float32 and float64 blockwise losses, the device neighbour
# search, minibatch paths, multi-device sharding, LMNN's active set, the driver, the deep losses' data-parallel
# step (on the GPU, and on simulated CPU devices) and its cross-batch memory
tests=(tests/test_large.py tests/methods/gradient/test_lmnn_active.py tests/test_driver.py
       tests/losses/deep/test_deep_parallel.py)

if [ $smoke = 1 ]; then
    export JAX_PLATFORMS=cpu
    export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
    device=cpu
    plans=(--plan "nca,lmnn=synth-d8-c3:400" --plan "itml,kda=synth-d8-c3:300")
    matrix_args=(--jobs 2 --timeout 120 --memory-limit 4)
else
    echo "== 1. install (no dependencies, no network) =="
    if ! $py -m pip install -q --no-deps --no-build-isolation --no-index -e . >"$outdir/install.log" 2>&1; then
        echo "pip could not install the checkout (see install.log); using PYTHONPATH"
        export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
    fi
    device=gpu
    plans=(--plan "nca,lmnn=synth-d64-c10:1000000@200" --plan "rest=synth-d32-c10:200000")
    matrix_args=(--jobs 6 --timeout 90 --memory-limit 20)
fi

echo "== 2. device =="
command -v nvidia-smi >/dev/null && nvidia-smi -L
$py - "$device" <<'EOF' | tee "$outdir/device.txt"
import sys
import jax
import jaxdml
want = sys.argv[1]
print(f"jax {jax.__version__}, backend {jax.default_backend()}, devices {jax.devices()}, jaxdml from {jaxdml.__file__}")
if want == "gpu" and jax.default_backend() != "gpu":
    sys.exit("gpu_check.sh: JAX sees no GPU (install jax[cuda12] or jax[cuda13]); use --cpu-smoke on a CPU")
EOF
[ "${PIPESTATUS[0]}" = 0 ] || exit 1

echo "== 3. tests (GPU-relevant part) =="
if [ -n "${GPU_CHECK_SKIP_TESTS:-}" ]; then
    echo "skipped (GPU_CHECK_SKIP_TESTS)" >"$outdir/pytest.log"; test_rc=0
elif [ $smoke = 1 ]; then  # collect only: the selection still exists and imports
    $py -m pytest -q -p no:cacheprovider --collect-only "${tests[@]}" >"$outdir/pytest.log" 2>&1
    test_rc=$?
else
    workers=()
    $py -c "import xdist" 2>/dev/null && workers=(-n 4)
    timeout 130 $py -m pytest -q -p no:cacheprovider "${workers[@]}" "${tests[@]}" >"$outdir/pytest.log" 2>&1
    test_rc=$?
fi
tail -n 15 "$outdir/pytest.log"
echo "pytest exit status $test_rc after $(elapsed) s"

echo "== 4. scale matrix =="
left=$((budget - $(elapsed) - 100))
[ $left -lt 30 ] && left=30
$py benchmarks/bench_scale_matrix.py "${plans[@]}" --device $device --deadline $left "${matrix_args[@]}" \
    --out "$outdir/scale_matrix.json" --markdown "$outdir/scale_matrix.md"
matrix_rc=$?

echo "== 5. summary =="
$py - "$outdir" "$test_rc" "$matrix_rc" "$(elapsed)" <<'EOF'
import datetime, json, os, re, sys
outdir, test_rc, matrix_rc, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
log = open(os.path.join(outdir, "pytest.log")).read()
counts = {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|skipped|errors?|xfailed|tests? collected)", log)}
matrix = json.load(open(os.path.join(outdir, "scale_matrix.json"))) if matrix_rc == 0 else None
summary = dict(date=datetime.date.today().isoformat(), device=open(os.path.join(outdir, "device.txt")).read().strip(),
               tests=dict(exit_status=test_rc, **counts), matrix_exit_status=matrix_rc, seconds=seconds,
               matrix=matrix)
json.dump(summary, open(os.path.join(outdir, "gpu_check.json"), "w"), indent=1, default=float)
print(json.dumps({k: v for k, v in summary.items() if k != "matrix"}))
EOF
echo "results in $outdir (gpu_check.json, scale_matrix.md, pytest.log) after $(elapsed) s"
[ $test_rc = 0 ] && [ $matrix_rc = 0 ]
