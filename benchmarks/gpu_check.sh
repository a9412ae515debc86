#!/usr/bin/env bash
# One prepared script for a machine with an NVIDIA GPU and a CUDA build of torch:
#  1. checks torch.ops.myop.weighted_sum on CUDA against alpha*x1 + (1-alpha)*x2;
#  2. for the sm_80-only and the matching (reference) builds, compares opdoctor's prediction
#     for this GPU with what a real kernel launch does.
# Usage: PY=python3 bash benchmarks/gpu_check.sh   (run from the repository root after `make fixtures`)
set -u
PY=${PY:-.venv/bin/python}
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1)
echo "GPU compute capability: $cc"
$PY - <<'PYEOF'
import sys, torch
sys.path.insert(0, "build/pkg")
import myop
x1 = torch.randn(1 << 20, device="cuda"); x2 = torch.randn(1 << 20, device="cuda")
got = torch.ops.myop.weighted_sum(x1, x2, 0.3)
ok = torch.allclose(got, 0.3 * x1 + 0.7 * x2)
print("weighted_sum on CUDA matches alpha*x1 + (1-alpha)*x2:", ok)
PYEOF
for lib in build/myop/libmyop.so build/fixtures/cuda/sm80_only.so build/fixtures/cuda/sm90_only.so; do
  predicted=$($PY -m opdoctor check --gpu "$cc" --select OD310 -f json "$lib" \
    | $PY -c "import json,sys; d=json.load(sys.stdin); print('no-image' if d['reports'][0]['findings'] else 'runs')")
  actual=$($PY - "$lib" <<'PYEOF'
import ctypes, sys, torch
lib = ctypes.CDLL(sys.argv[1])
n = 1024
a = torch.ones(n, device="cuda"); b = torch.zeros(n, device="cuda"); out = torch.empty(n, device="cuda")
rc = lib.myop_weighted_sum_launch(ctypes.c_void_p(out.data_ptr()), ctypes.c_void_p(a.data_ptr()),
                                  ctypes.c_void_p(b.data_ptr()), ctypes.c_float(0.5), ctypes.c_int64(n))
torch.cuda.synchronize()
print("runs" if rc == 0 and torch.allclose(out, torch.full_like(out, 0.5)) else f"no-image (cudaError {rc})")
PYEOF
)
  echo "$lib: predicted=$predicted actual=$actual"
done
