# Part `nccl_bytes` of run-all.sh (issue 26: the bytes of each NCCL collective). ONE GPU, under
# 60 s (one PyTorch process, about 15 s of it NCCL and CUDA start-up).
#
# A PyTorch process of its own job (torch.distributed, world size 1, backend nccl, init_method
# tcp://127.0.0.1 on a free port) all-reduces float32 tensors of known sizes (1 MiB and 16 MiB,
# 5 times each) under `xpuprof --source cupti --sink summary,chrome`. NCCL runs a one-rank job
# without its ring kernels: an in-place SUM launches nothing, so the all-reduces use AVG, whose
# one-rank path launches NCCL's `oneRankReduce` kernel inside the `ncclAllReduce` NVTX range.
# The agent reads the range's extended payload (NCCL's registered schema: `Message size
# [bytes]`, `NCCL communicator ID`) and the host puts the bytes on the kernel. Rows: PASS when
# summary.json's Collectives section has 10 all-reduces of 5 × (1 + 16) MiB, and each
# collective slice of trace.json carries its tensor's bytes and a bandwidth; FAIL otherwise.
# Also logged: NCCL's version and the schema registrations the agent saw (its verbose lines).
NB=$W/logs/nccl_bytes
mkdir -p "$NB"
cat >"$NB/allreduce.py" <<'PY'
import socket
import torch
import torch.distributed as dist

s = socket.socket()
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
s.close()
torch.cuda.set_device(0)
dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
print("nccl", ".".join(map(str, torch.cuda.nccl.version())), flush=True)
for nbytes in (1 << 20, 16 << 20):
    t = torch.ones(nbytes // 4, device="cuda", dtype=torch.float32)
    for _ in range(5):
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
    torch.cuda.synchronize()
    print("allreduce", nbytes, "x5", flush=True)
dist.destroy_process_group()
print("done", flush=True)
PY
if [ ! -x "$CARRY/xpuprof" ]; then
  row "nccl_bytes" "FAIL no $CARRY/xpuprof"
else
  NCCL_DEBUG=WARN timeout 90 "$CARRY/xpuprof" --plugin-dir "$CARRY" --source cupti --sink summary,chrome \
    -o "$NB/out" -- python3 "$NB/allreduce.py" >"$NB/run.out" 2>"$NB/run.err"
  row "nccl_bytes record" "rc=$? $(grep -m1 '^nccl ' "$NB/run.out") $(grep -c '^allreduce' "$NB/run.out") sizes done"
  python3 - "$NB/out" >"$NB/check.txt" 2>&1 <<'PY'
import json, sys
out = sys.argv[1]
want = {1 << 20: 5, 16 << 20: 5}
def find(o, key):
    if isinstance(o, dict):
        if key in o:
            return o[key]
        for v in o.values():
            r = find(v, key)
            if r is not None:
                return r
    elif isinstance(o, list):
        for v in o:
            r = find(v, key)
            if r is not None:
                return r
    return None
try:
    coll = find(json.load(open(f"{out}/summary.json")), "collectives") or {}
except Exception as e:
    coll = {}
    print(f"CHECK summary FAIL cannot read summary.json: {e}")
kinds = {k.get("kind"): k for k in coll.get("kinds", [])}
ar = kinds.get("allreduce", {})
total = sum(n * c for n, c in want.items())
ok = ar.get("count") == 10 and ar.get("bytes") == total
print(f"CHECK summary {'PASS' if ok else 'FAIL'} allreduce count {ar.get('count')} bytes {ar.get('bytes')} "
      f"(want 10 and {total}); {ar.get('gb_per_s')} GB/s; kinds {sorted(kinds)}")
try:
    events = json.load(open(f"{out}/trace.json"))
    events = events["traceEvents"] if isinstance(events, dict) else events
except Exception as e:
    events = []
    print(f"CHECK trace FAIL cannot read trace.json: {e}")
seen = {}
for e in events:
    a = e.get("args") or {}
    if e.get("ph") == "X" and "bandwidth_mb_per_s" in a:
        seen[a.get("bytes")] = seen.get(a.get("bytes"), 0) + 1
names = {}
for e in events:
    n = str(e.get("name", ""))
    if e.get("ph") == "X" and ("nccl" in n.lower() or "onerank" in n.lower()):
        k = (n[:60], (e.get("args") or {}).get("bytes"))
        names[k] = names.get(k, 0) + 1
print("NCCL device work (name, bytes): count:", names)
ok = all(seen.get(n, 0) == c for n, c in want.items())
print(f"CHECK trace {'PASS' if ok else 'FAIL'} collective slices with bytes and bandwidth, by bytes: {seen} (want {want})")
PY
  grep '^CHECK' "$NB/check.txt" | while read -r _ name verdict detail; do
    row "nccl_bytes $name" "$verdict $(echo "$detail" | cut -c1-160)"
  done
  grep -q '^CHECK' "$NB/check.txt" || row "nccl_bytes check" "FAIL $(tail -1 "$NB/check.txt" | cut -c1-160)"
  grep -i 'payload\|schema\|nvtx' "$NB/run.err" | head -20 >"$NB/agent-lines.txt"
fi
