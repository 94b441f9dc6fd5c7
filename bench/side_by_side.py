"""Running one benchmark script once per engine, each in its own virtual
environment (oxnet in .venv, PyTorch in .venv-bench, MXNet 1.9.1 in
.venv-mxnet), and merging what they print: the scripts bench/graph.py and
bench/gluon.py re-run themselves with ``--engine NAME``."""

import argparse
import json
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(script, engines):
    """``engines``: name → (venv folder, function returning a dict of
    figures). In a child (``--engine NAME``) prints that engine's figures
    and returns None; in the parent returns every engine's figures merged
    (a missing venv or a failed engine is said and left out)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--engine", choices=sorted(engines))
    args = parser.parse_args()
    if args.engine:
        print(json.dumps(engines[args.engine][1]()))
        return None
    figures = {}
    for name, (venv, _) in engines.items():
        python = os.path.join(ROOT, venv, "bin", "python")
        if not os.path.exists(python):
            print(f"({name}: {venv} is missing; left out)")
            continue
        result = subprocess.run([python, os.path.abspath(script), "--engine", name], capture_output=True, text=True)
        if result.returncode != 0:
            print(f"({name} failed: {result.stderr.strip().splitlines()[-1] if result.stderr.strip() else '?'})")
            continue
        figures.update(json.loads(result.stdout.strip().splitlines()[-1]))
    return figures
