"""Writes tests/fixtures/optimizer/lbsgd.npz with MXNet 1.9.1: the weights of
``LBSGD`` (each warm-up strategy, across the end of the warm-up, with and
without momentum, from a later epoch, under a scheduler, float16 with
multi-precision) and of ``ccSGD`` after each of a number of updates.

Run from the repository root with the MXNet side environment::

    .venv-mxnet/bin/python scripts/make_optimizer_fixtures.py

The archive holds the inputs, ``weight{i}`` (the two initial float32
weights) and ``grad{i}`` (one gradient per step, stacked), and for each
case ``<case>:kwargs`` (the optimizer's name and arguments, JSON),
``<case>:setup`` (JSON: multipliers, scheduler, dtype) and
``<case>:w{i}``: weight ``i`` after each step, stacked. Every step calls the
updater of ``mx.optimizer.get_updater`` once per weight with a fresh
gradient array.
"""

import json
import pathlib

import mxnet as mx
import numpy as np

OUT = pathlib.Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "optimizer"
STEPS = 14
SHAPES = [(3, 4), (5,)]
COMMON = dict(learning_rate=0.1, wd=0.01, rescale_grad=0.5, clip_gradient=0.8)
# warm-up over 8 calls; large batches of 2 calls: steps at counts 2, 4, 6 (warm-up) and 8, 10, ... (full rate)
WARM = dict(batch_scale=2, warmup_epochs=2, updates_per_epoch=4)
SETUP = {"lr_mult": {"1": 0.5}, "wd_mult": {"1": 2.0}, "scheduler": None, "dtype": "float32"}

CASES = {
    "linear": ("lbsgd", dict(COMMON, momentum=0.9, warmup_strategy="linear", **WARM), SETUP),
    "power2": ("lbsgd", dict(COMMON, warmup_strategy="power2", **WARM), SETUP),
    "sqrt": ("lbsgd", dict(COMMON, momentum=0.5, warmup_strategy="sqrt", **WARM), SETUP),
    "lars": ("lbsgd", dict(COMMON, momentum=0.9, warmup_strategy="lars", **WARM), SETUP),
    "other": ("lbsgd", dict(COMMON, momentum=0.9, warmup_strategy="constant", **WARM), SETUP),
    "begin_epoch": ("lbsgd", dict(COMMON, momentum=0.9, warmup_strategy="linear", batch_scale=3, warmup_epochs=3,
                                  updates_per_epoch=3, begin_epoch=1), SETUP),
    "scale1": ("lbsgd", dict(COMMON, momentum=0.9, warmup_strategy="sqrt", batch_scale=1, warmup_epochs=1,
                             updates_per_epoch=4), SETUP),
    "scheduler": ("lbsgd", dict(wd=0.01, momentum=0.9, warmup_strategy="linear", **WARM),
                  dict(SETUP, scheduler={"step": 3, "factor": 0.5, "base_lr": 0.2})),
    "float16_mp": ("lbsgd", dict(COMMON, momentum=0.9, multi_precision=True, warmup_strategy="linear", **WARM),
                   dict(SETUP, dtype="float16")),
    "ccsgd": ("ccsgd", dict(COMMON, momentum=0.9), SETUP),
}


def run(name, kwargs, setup, weights, grads):
    kwargs = dict(kwargs)
    if setup["scheduler"] is not None:
        kwargs["lr_scheduler"] = mx.lr_scheduler.FactorScheduler(**setup["scheduler"])
    opt = mx.optimizer.create(name, **kwargs)
    opt.set_lr_mult({int(k): v for k, v in setup["lr_mult"].items()})
    opt.set_wd_mult({int(k): v for k, v in setup["wd_mult"].items()})
    updater = mx.optimizer.get_updater(opt)
    dtype = setup["dtype"]
    ws = [mx.nd.array(w, dtype=dtype) for w in weights]
    traj = [[] for _ in ws]
    for step in range(STEPS):
        for i, w in enumerate(ws):
            updater(i, mx.nd.array(grads[i][step], dtype=dtype), w)
            traj[i].append(w.asnumpy())
    return [np.stack(t) for t in traj]


def main():
    rng = np.random.RandomState(7)
    weights = [rng.uniform(-1, 1, s).astype(np.float32) for s in SHAPES]
    grads = [rng.uniform(-2, 2, (STEPS,) + s).astype(np.float32) for s in SHAPES]
    out = {}
    for i, (w, g) in enumerate(zip(weights, grads)):
        out[f"weight{i}"] = w
        out[f"grad{i}"] = g
    for case, (name, kwargs, setup) in CASES.items():
        out[f"{case}:kwargs"] = np.array(json.dumps({"name": name, "kwargs": kwargs}))
        out[f"{case}:setup"] = np.array(json.dumps(setup))
        for i, t in enumerate(run(name, kwargs, setup, weights, grads)):
            out[f"{case}:w{i}"] = t
    OUT.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT / "lbsgd.npz", **out)
    print(f"wrote {OUT / 'lbsgd.npz'} ({len(CASES)} cases, {STEPS} steps)")


if __name__ == "__main__":
    main()
