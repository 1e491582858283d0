# Part `presentation` of run-all.sh (issue 27): the third-party workloads the issue was found on,
# re-recorded with every output a user opens, and the outputs checked against each other by
# scripts/gpu/check_figures.py (busy time = the union of the trace's kernel slices, no idle gap
# holds a kernel, allocation counts explained, xpuprof's own cost apart, a user-level GPU view,
# pprof read by go's pprof, Perfetto's trace decoded with Perfetto's own protos):
#   resnet  torchvision ResNet-18 training (tests/workloads/torch/real_bench.py plain resnet)
#   qwen    HF transformers Qwen3-shaped decoding, random weights from a config (real_bench qwen)
#   ddp     ResNet-18 under DDP over NCCL on 2 GPUs with torchrun (real_bench ddp)
#   jax     a JAX training loop (tests/workloads/jax/train.py)
# The readers come from carry.sh (.device-carry/readers: go's pprof tool binary, Perfetto's
# Python protos with protobuf's pure-Python runtime); the part says so where one is missing.
# Short runs (a few seconds of steps each) keep the part near three minutes.
#
# PRESENTATION_QUICK=1 runs ResNet-18 training alone, 20 steps, every check row (Perfetto lanes
# included) in under 60 s (R2: 30 steps recorded in 10 s):
#   PRESENTATION_QUICK=1 scripts/gpu/run-all.sh presentation
PR_QUICK=${PRESENTATION_QUICK:-0}
# Time limits of one recording and of its checks (quick: the whole part stays under 60 s).
if [ "$PR_QUICK" = 1 ]; then pr_rec_s=40 pr_check_s=40; else pr_rec_s=240 pr_check_s=400; fi
PR=$W/logs/presentation
mkdir -p "$PR" "$W/presentation-out"
PX="$CARRY/xpuprof --plugin-dir $CARRY"
PSINKS=summary,folded,flamegraph,chrome,perfetto,pprof
pr_readers=$W/readers
mkdir -p "$pr_readers"
pr_args=""
if [ -f "$CARRY/readers/pprof.gz" ]; then
  gunzip -c "$CARRY/readers/pprof.gz" >"$pr_readers/pprof" && chmod +x "$pr_readers/pprof" \
    && pr_args="$pr_args --pprof $pr_readers/pprof"
fi
if [ -f "$CARRY/readers/python.tar.gz" ]; then
  mkdir -p "$pr_readers/py" && tar xzf "$CARRY/readers/python.tar.gz" -C "$pr_readers/py" \
    && pr_args="$pr_args --perfetto-check $ROOT/plugins/perfetto/tests/check_trace.py"
fi
row "presentation readers" "$( [ -x "$pr_readers/pprof" ] && echo "go pprof" || echo "no go pprof" ), $( [ -d "$pr_readers/py/perfetto" ] && echo "perfetto protos" || echo "no perfetto protos" )"

# pr_record NAME LIST_REGEX CMD...: records CMD with every output, checks them, one row per check.
pr_record() {
  local name=$1 list=$2
  shift 2
  local d=$W/presentation-out/$name
  rm -rf "$d"
  local t0=$SECONDS
  timeout $pr_rec_s $PX --source ebpf,cupti --sink $PSINKS -o "$d" -- "$@" >"$PR/$name.out" 2>"$PR/$name.err"
  local rc=$?
  row "presentation $name recorded" "rc=$rc in $((SECONDS - t0)) s"
  [ -f "$d/summary.json" ] || { tail -5 "$PR/$name.err"; return; }
  PYTHONPATH=$pr_readers/py PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python timeout $pr_check_s \
    python3 "$ROOT/scripts/gpu/check_figures.py" "$d" --python --list "$list" $pr_args >"$PR/$name.check" 2>&1
  echo "check rc=$?" >>"$PR/$name.check"
  while read -r status rest; do
    case $status in
      PASS|FAIL) row "pres $name ${rest%%:*}" "$status: ${rest#*: }" ;;
    esac
  done <"$PR/$name.check"
  grep '^INFO' "$PR/$name.check" | head -12
  # Device work the sinks got later than their reorder window (placed in the gaps it fits).
  local late
  late=$(grep -o '[0-9]* device operations arrived after later work' "$PR/$name.err" 2>/dev/null | head -1 | cut -d' ' -f1)
  row "pres $name late device work" "${late:-0} operations arrived later than the timeline sinks' reorder window"
  grep -v '^\(PASS\|FAIL\|INFO\)' "$PR/$name.check" | tail -5
  cp "$d/summary.txt" "$PR/$name-summary.txt" 2>/dev/null
  for f in pprof-top.txt pprof-list.txt; do cp "$d/$f" "$PR/$name-$f" 2>/dev/null; done
  head -c 300000 "$d/profile.gpu.folded" >"$PR/$name-gpu.folded" 2>/dev/null
  tail -30 "$PR/$name.err" >"$PR/$name.err.tail" && rm -f "$PR/$name.err"
}

pr_ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
RB=$ROOT/tests/workloads/torch/real_bench.py
if [ ! -x "$CARRY/xpuprof" ]; then
  row "presentation" "skipped: no $CARRY/xpuprof"
elif [ "$PR_QUICK" = 1 ]; then
  CUDA_VISIBLE_DEVICES=0 pr_record resnet forward python3 "$RB" plain resnet 20
  row "presentation quick" "ResNet-18 only (PRESENTATION_QUICK=1): qwen, ddp, jax not run"
else
  CUDA_VISIBLE_DEVICES=0 pr_record resnet forward python3 "$RB" plain resnet 30
  CUDA_VISIBLE_DEVICES=0 pr_record qwen forward python3 "$RB" plain qwen 40
  if [ "$pr_ngpu" -ge 2 ]; then
    NCCL_DEBUG=WARN pr_record ddp forward torchrun --standalone --nproc_per_node 2 "$RB" plain ddp 20
  else
    row "presentation ddp" "skipped: $pr_ngpu GPU(s), needs 2"
  fi
  CUDA_VISIBLE_DEVICES=0 XLA_PYTHON_CLIENT_PREALLOCATE=false pr_record jax "dense|loss_fn|train_step|run" \
    python3 "$ROOT/tests/workloads/jax/train.py" --steps 200
  du -sh "$PR" | sed 's/^/presentation logs: /'
fi
