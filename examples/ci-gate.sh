#!/usr/bin/env bash
# Gate a deployment change on memory fit and latency. optadvisor exits 3 when a check fails
# (does not fit, or a --require is unmet) and 2 on bad input, so `set -e` stops the job either way.
#   examples/ci-gate.sh [optadvisor binary]
set -euo pipefail
optadvisor=${1:-optadvisor}
here=$(cd "$(dirname "$0")" && pwd)
# Our serving box (a power-capped L40S, examples/data/) and our model (a Hugging Face config.json).
common=(--hw our-l40s --model-config "$here/config.json" --quant fp8 --engine vllm --kv-dtype fp8)

# 1. The model and a 32k context for 8 concurrent users must fit, with 2 GiB to spare.
"$optadvisor" --data-dir "$here/data" fit "${common[@]}" --context 32768 --batch 8 \
  --require memory.fits --require 'memory.headroom_bytes>=2GiB' --json > fit.json

# 2. Latency: first token within 1 s for a 2k prompt, 30 tokens/s per user at batch 8.
"$optadvisor" --data-dir "$here/data" estimate "${common[@]}" --batch 8 --prompt 2048 --gen 256 \
  --require 'prefill.ttft_s<=1.0' --require 'decode.tokens_per_s_per_sequence>=30' --json > estimate.json

python3 - <<'PY'
import json
e = json.load(open("estimate.json"))
print(f"deployment gate passed: TTFT {e['prefill']['ttft_s'] * 1e3:.0f} ms, "
      f"{e['decode']['tokens_per_s_per_sequence']:.1f} tokens/s per user")
PY
