"""Running one benchmark script once per engine, each in its own virtual
environment (oxnet in .venv, PyTorch in .venv-bench, MXNet 1.9.1 in
.venv-mxnet), and merging what they print: the scripts bench/graph.py and
bench/gluon.py re-run themselves with ``--engine NAME``.

The engines take turns over several rounds (``--rounds``, default 3: oxnet,
PyTorch, MXNet, then again in the same order), and each figure is the median
of its rounds. On a shared VM whose speed drifts over a minute, one engine
measured wholly in a slow phase would otherwise carry the whole drift into
the ratios; taking turns spreads it over all of them."""

import argparse
import json
import os
import statistics
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(script, engines):
    """``engines``: name → (venv folder, function returning a dict of
    figures). In a child (``--engine NAME``) prints that engine's figures
    and returns None; in the parent returns every engine's figures merged,
    each the median over the rounds (a missing venv or a failed engine is
    said and left out)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--engine", choices=sorted(engines))
    parser.add_argument("--rounds", type=int, default=3, help="turns each engine takes (default 3)")
    args = parser.parse_args()
    if args.engine:
        print(json.dumps(engines[args.engine][1]()))
        return None
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    runs = {}  # figure name -> one value per round
    present = {}
    for name, (venv, _) in engines.items():
        python = os.path.join(ROOT, venv, "bin", "python")
        if os.path.exists(python):
            present[name] = python
        else:
            print(f"({name}: {venv} is missing; left out)")
    for _ in range(args.rounds):
        for name, python in list(present.items()):
            result = subprocess.run([python, os.path.abspath(script), "--engine", name],
                                    capture_output=True, text=True)
            if result.returncode != 0:
                lines = result.stderr.strip().splitlines()
                print(f"({name} failed: {lines[-1] if lines else '?'})")
                del present[name]
                continue
            for key, value in json.loads(result.stdout.strip().splitlines()[-1]).items():
                runs.setdefault(key, []).append(value)
    print(f"(each figure: the median of {args.rounds} rounds, engines taking turns)")
    return {key: statistics.median(values) if all(isinstance(v, (int, float)) for v in values) else values[-1]
            for key, values in runs.items()}
