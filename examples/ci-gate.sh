#!/usr/bin/env bash
# Gate a deployment change on memory fit and decode speed. Exit 3 from optadvisor means the check failed.
#   examples/ci-gate.sh [optadvisor binary]
set -euo pipefail
optadvisor=${1:-optadvisor}
here=$(cd "$(dirname "$0")" && pwd)

# 1. The model and a 32k context must fit on the serving GPU (our own profile, from examples/data/).
"$optadvisor" --data-dir "$here/data" fit --hw our-l40s --model-config "$here/config.json" \
  --quant fp8 --engine vllm --kv-dtype fp8 --context 32768 --batch 8 --json > fit.json

# 2. Decode must stay above 30 tokens/s per sequence at batch 8.
"$optadvisor" --data-dir "$here/data" estimate --hw our-l40s --model-config "$here/config.json" \
  --quant fp8 --engine vllm --kv-dtype fp8 --batch 8 --prompt 2048 --gen 256 --json > estimate.json
python3 - <<'PY'
import json, sys
e = json.load(open("estimate.json"))
tps = e["decode"]["tokens_per_s_per_sequence"]
print(f"decode {tps:.1f} tokens/s per sequence, bound: {e['decode']['bound']}")
sys.exit(0 if tps >= 30 else 3)
PY
