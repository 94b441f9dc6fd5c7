"""mx.optimizer and mx.lr_scheduler against numpy references of MXNet 1.9.1's formulas,
and against MXNet 1.9.1 itself (side environment .venv-mxnet)."""

import json
import math
import pickle
import subprocess
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest

import oxnet as mx

ROOT = Path(__file__).resolve().parents[2]
MXNET_PYTHON = ROOT / ".venv-mxnet" / "bin" / "python"

SHAPES = [(3, 4), (5,)]
STEPS = 4
RS, CLIP, WD = 0.5, 0.8, 0.1
MULTS = [(1.0, 1.0), (0.5, 2.0)]  # (lr_mult, wd_mult) of the two parameters


def clip(x, c):
    return np.clip(x, -c, c) if c is not None and c > 0 else x


def weights0(dtype=np.float64):
    rng = np.random.RandomState(0)
    return [rng.uniform(-1, 1, s).astype(dtype) for s in SHAPES]


def grads(step, dtype=np.float64):
    rng = np.random.RandomState(100 + step)
    return [rng.uniform(-2, 2, s).astype(dtype) for s in SHAPES]


# ----- numpy references: each takes (t, w, g, state dict, lr, wd, shared dict) and returns the new w ------

def ref_sgd(mu):
    def step(t, w, g, s, lr, wd, shared):
        s.setdefault("mom", np.zeros_like(w))
        s["mom"] = mu * s["mom"] - lr * wd * w - lr * clip(RS * g, CLIP)
        return w + s["mom"]
    return step


def ref_nag(mu):
    def step(t, w, g, s, lr, wd, shared):
        s.setdefault("mom", np.zeros_like(w))
        d = clip(RS * g, CLIP) + wd * w
        s["mom"] = mu * s["mom"] - lr * d
        return w + mu * s["mom"] - lr * d
    return step


def ref_adam(b1, b2, eps):
    def step(t, w, g, s, lr, wd, shared):
        m, v = s.setdefault("m", np.zeros_like(w)), s.setdefault("v", np.zeros_like(w))
        gr = clip(RS * g + wd * w, CLIP)
        s["m"], s["v"] = b1 * m + (1 - b1) * gr, b2 * v + (1 - b2) * gr * gr
        lr_t = lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        return w - lr_t * s["m"] / (np.sqrt(s["v"]) + eps)
    return step


def ref_adamw(b1, b2, eps):
    def step(t, w, g, s, lr, wd, shared):
        m, v = s.setdefault("m", np.zeros_like(w)), s.setdefault("v", np.zeros_like(w))
        gr = clip(RS * g, CLIP)
        s["m"], s["v"] = b1 * m + (1 - b1) * gr, b2 * v + (1 - b2) * gr * gr
        lr_t = lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        return w - lr_t * (s["m"] / (np.sqrt(s["v"]) + eps) + wd * w)
    return step


def ref_adagrad(eps):
    def step(t, w, g, s, lr, wd, shared):
        gr = clip(RS * g, CLIP)
        s["h"] = s.get("h", 0) + gr * gr
        return w - lr * (gr / np.sqrt(s["h"] + eps) + wd * w)
    return step


def ref_adadelta(rho, eps):
    def step(t, w, g, s, lr, wd, shared):
        gr = clip(RS * g, CLIP)
        s["ag"] = rho * s.get("ag", 0) + (1 - rho) * gr * gr
        delta = np.sqrt(s.get("ad", 0) + eps) / np.sqrt(s["ag"] + eps) * gr
        s["ad"] = rho * s.get("ad", 0) + (1 - rho) * delta * delta
        return w - (delta + wd * w)
    return step


def ref_rmsprop(g1, g2, eps, centered):
    def step(t, w, g, s, lr, wd, shared):
        gr = clip(RS * g + wd * w, CLIP)
        s["n"] = (1 - g1) * gr * gr + g1 * s.get("n", 0)
        if not centered:
            return w - lr * gr / np.sqrt(s["n"] + eps)
        s["g"] = (1 - g1) * gr + g1 * s.get("g", 0)
        s["d"] = g2 * s.get("d", 0) - lr * gr / np.sqrt(s["n"] - s["g"] ** 2 + eps)
        return w + s["d"]
    return step


def ref_adamax(b1, b2):
    def step(t, w, g, s, lr, wd, shared):
        gr = clip(RS * g + wd * w, CLIP)
        s["m"] = b1 * s.get("m", 0) + (1 - b1) * gr
        s["u"] = np.maximum(b2 * s.get("u", np.zeros_like(w)), np.abs(gr))
        return w - lr / (1 - b1 ** t) * s["m"] / s["u"]
    return step


def ref_nadam(b1, b2, eps, sd):
    def step(t, w, g, s, lr, wd, shared):
        gr = clip(RS * g + wd * w, CLIP)
        mt = b1 * (1 - 0.5 * 0.96 ** (t * sd))
        mt1 = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * sd))
        shared["ms"] = shared.get("ms", 1.0) * mt  # one schedule for the whole optimizer, as in MXNet
        ms_next = shared["ms"] * mt1
        s["m"] = b1 * s.get("m", 0) + (1 - b1) * gr
        s["v"] = b2 * s.get("v", 0) + (1 - b2) * gr * gr
        m_bar = (1 - mt) * gr / (1 - shared["ms"]) + mt1 * s["m"] / (1 - ms_next)
        return w - lr * m_bar / (np.sqrt(s["v"] / (1 - b2 ** t)) + eps)
    return step


def ref_ftrl(l1, beta):
    def step(t, w, g, s, lr, wd, shared):
        gr = clip(RS * g, CLIP)
        z, n = s.get("z", 0), s.get("n", 0)
        z = z + gr - (np.sqrt(n + gr * gr) - np.sqrt(n)) * w / lr
        n = n + gr * gr
        s["z"], s["n"] = z, n
        return (np.sign(z) * l1 - z) / ((beta + np.sqrt(n)) / lr + wd) * (np.abs(z) > l1)
    return step


def ref_signum(mu, wd_lh):
    def step(t, w, g, s, lr, wd, shared):
        s["mom"] = mu * s.get("mom", 0) - (1 - mu) * (wd * w + clip(RS * g, CLIP))
        return (1 - lr * wd_lh) * w + lr * np.sign(s["mom"])
    return step


def ref_signsgd():
    def step(t, w, g, s, lr, wd, shared):
        return (1 - lr * wd) * w - lr * np.sign(g)
    return step


def ref_lamb(b1, b2, eps):
    def step(t, w, g, s, lr, wd, shared):
        gr = clip(RS * g, CLIP)
        s["m"] = b1 * s.get("m", 0) + (1 - b1) * gr
        s["v"] = b2 * s.get("v", 0) + (1 - b2) * gr * gr
        upd = (s["m"] / (1 - b1 ** t)) / (np.sqrt(s["v"] / (1 - b2 ** t)) + eps) + wd * w
        r1, r2 = np.linalg.norm(w), np.linalg.norm(upd)
        ratio = r1 / r2 if r1 > 0 and r2 > 0 else 1.0
        return w - lr * ratio * upd
    return step


def ref_lars(mu, eta, eps):
    def step(t, w, g, s, lr, wd, shared):
        wn, gn = np.linalg.norm(w), np.linalg.norm(g) * RS
        lr = lr * (eta * wn / (gn + wd * wn + eps) if wn > 0 and gn > 0 else 1.0)
        s["mom"] = mu * s.get("mom", 0) - lr * wd * w - lr * clip(RS * g, CLIP)
        return w + s["mom"]
    return step


CASES = {
    "sgd": (dict(learning_rate=0.1, momentum=0.9), ref_sgd(0.9), 1e-12),
    "sgd_plain": (dict(learning_rate=0.1), ref_sgd(0.0), 1e-12),
    "nag": (dict(learning_rate=0.1, momentum=0.8), ref_nag(0.8), 1e-12),
    "adam": (dict(learning_rate=0.01, beta1=0.8, beta2=0.95), ref_adam(0.8, 0.95, 1e-8), 1e-12),
    "adamw": (dict(learning_rate=0.01), ref_adamw(0.9, 0.999, 1e-6), 1e-12),
    "adagrad": (dict(learning_rate=0.1, eps=1e-6), ref_adagrad(1e-6), 1e-12),
    "adadelta": (dict(rho=0.8, epsilon=1e-4), ref_adadelta(0.8, 1e-4), 1e-12),
    "rmsprop": (dict(learning_rate=0.01, gamma1=0.8), ref_rmsprop(0.8, 0.9, 1e-8, False), 1e-12),
    "rmsprop_centered": (dict(learning_rate=0.01, centered=True, gamma2=0.7, epsilon=1e-4),
                         ref_rmsprop(0.9, 0.7, 1e-4, True), 1e-12),
    "adamax": (dict(learning_rate=0.01), ref_adamax(0.9, 0.999), 1e-12),
    "nadam": (dict(learning_rate=0.01), ref_nadam(0.9, 0.999, 1e-8, 0.004), 1e-12),
    "ftrl": (dict(learning_rate=0.2, lamda1=0.05, beta=0.5), ref_ftrl(0.05, 0.5), 1e-12),
    "signum": (dict(learning_rate=0.01, wd_lh=0.05), ref_signum(0.9, 0.05), 1e-12),
    "signum_no_momentum": (dict(learning_rate=0.01, momentum=0.0), ref_signsgd(), 1e-12),
    "lamb": (dict(learning_rate=0.01), ref_lamb(0.9, 0.999, 1e-6), 1e-6),
    "lars": (dict(learning_rate=0.1, momentum=0.9, eta=0.01), ref_lars(0.9, 0.01, 0.0), 1e-6),
}


def run_oxnet(name, kwargs, dtype=np.float64, steps=STEPS, mults=MULTS):
    params = {i: types.SimpleNamespace(lr_mult=l, wd_mult=w) for i, (l, w) in enumerate(mults)}
    opt = mx.optimizer.create(name.split("_")[0], wd=WD, rescale_grad=RS, clip_gradient=CLIP, param_dict=params,
                              **kwargs)
    updater = mx.optimizer.get_updater(opt)
    ws = [mx.nd.array(w, dtype=dtype) for w in weights0(dtype)]
    for step in range(steps):
        updater.update_multi([0, 1], [mx.nd.array(g, dtype=dtype) for g in grads(step, dtype)], ws)
    return [w.asnumpy() for w in ws], opt, updater


def run_reference(reference, lr, steps=STEPS, mults=MULTS):
    ws, states, shared = weights0(), [{}, {}], {}
    for step in range(steps):
        for i, g in enumerate(grads(step)):
            ws[i] = reference(step + 1, ws[i], g, states[i], lr * mults[i][0], WD * mults[i][1], shared)
    return ws


@pytest.mark.parametrize("case", sorted(CASES))
def test_optimizer_matches_numpy_reference(case):
    kwargs, reference, tol = CASES[case]
    name = case.split("_")[0]
    got, opt, _ = run_oxnet(case, kwargs)
    want = run_reference(reference, opt.lr)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
    assert opt.num_update == STEPS and opt._index_update_count == {0: STEPS, 1: STEPS}
    assert type(opt).__name__.lower() == name
    # float32 weights follow the same formula to float32 accuracy
    got32, _, _ = run_oxnet(case, kwargs, dtype=np.float32)
    for g, w in zip(got32, want):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-5)


def test_defaults_and_attributes_follow_mxnet():
    assert mx.optimizer.SGD().learning_rate == 0.01
    assert (mx.optimizer.Adam().learning_rate, mx.optimizer.Adam().epsilon) == (0.001, 1e-8)
    assert mx.optimizer.Adamax().learning_rate == 0.002
    assert mx.optimizer.Ftrl().learning_rate == 0.1
    assert mx.optimizer.RMSProp().gamma1 == 0.9 and mx.optimizer.RMSProp().centered is False
    assert mx.optimizer.LAMB().lower_bound is None and mx.optimizer.LAMB().epsilon == 1e-6
    opt = mx.optimizer.create("SGD", momentum=0.5, wd=0.01, clip_gradient=2.0, multi_precision=True)
    assert (opt.momentum, opt.wd, opt.clip_gradient, opt.multi_precision, opt.rescale_grad) == (0.5, 0.01, 2.0,
                                                                                                True, 1.0)
    opt.momentum = 0.7
    opt.rescale_grad = 0.125
    assert (opt.momentum, opt.rescale_grad) == (0.7, 0.125)
    opt.set_learning_rate(0.3)
    assert opt.learning_rate == 0.3 and opt.lr == 0.3
    assert mx.optimizer.AdaGrad(eps=1e-3).float_stable_eps == 1e-3
    for cls in ["SGD", "NAG", "Adam", "AdamW", "AdaGrad", "AdaDelta", "RMSProp", "Adamax", "Nadam", "Ftrl",
                "Signum", "LAMB", "LARS"]:
        assert isinstance(mx.optimizer.create(cls.lower()), getattr(mx.optimizer, cls))


def test_multipliers_by_index_name_and_parameter():
    opt = mx.optimizer.SGD(learning_rate=1.0, wd=1.0, param_idx2name={0: "fc_weight", 1: "fc_bias", 2: "bn_gamma"})
    assert opt._get_wds([0, 1, 2]) == [1.0, 0.0, 1.0]  # no decay for biases by default
    opt.set_lr_mult({"fc_bias": 2.0, 0: 0.5})
    assert opt._get_lrs([0, 1, 2]) == [0.5, 2.0, 1.0]
    opt.set_wd_mult({"fc_bias": 3.0})
    assert opt._get_wd(1) == 3.0 and opt.wd_mult["fc_bias"] == 3.0
    opt.param_dict = {1: types.SimpleNamespace(lr_mult=4.0, wd_mult=0.25)}
    assert (opt._get_lr(1), opt._get_wd(1)) == (4.0, 0.25)
    # a Parameter's multiplier is read at each update
    w, g = mx.nd.array([1.0]), mx.nd.array([1.0])
    updater = mx.optimizer.get_updater(opt)
    updater(1, g, w)
    opt.param_dict[1].lr_mult = 0.0
    updater(1, g, w)
    np.testing.assert_allclose(w.asnumpy(), [1.0 - 4.0 * (1.0 + 0.25)], rtol=1e-6)


@pytest.mark.parametrize("name", ["sgd", "adam"])
def test_multi_precision_float16(name):
    kwargs = dict(learning_rate=0.05, momentum=0.9) if name == "sgd" else dict(learning_rate=0.01)
    reference = ref_sgd(0.9) if name == "sgd" else ref_adam(0.9, 0.999, 1e-8)
    opt = mx.optimizer.create(name, multi_precision=True, wd=WD, rescale_grad=RS, clip_gradient=CLIP, **kwargs)
    updater = mx.optimizer.get_updater(opt)
    ws = [mx.nd.array(w, dtype=np.float16) for w in weights0()]
    masters = [w.asnumpy().astype(np.float64) for w in ws]
    states, shared = [{}, {}], {}
    for step in range(STEPS):
        gs = [mx.nd.array(g, dtype=np.float16) for g in grads(step)]
        updater.update_multi([0, 1], gs, ws)
        for i, g in enumerate(gs):
            masters[i] = reference(step + 1, masters[i], g.asnumpy().astype(np.float64), states[i], opt.lr, WD,
                                   shared)
    for i, w in enumerate(ws):
        state = updater.states[i]
        # MXNet's layouts: SGD keeps (momentum, master), the others (master, (states...))
        master = state[1] if name == "sgd" else state[0]
        if name != "sgd":
            assert isinstance(state[1], tuple) and len(state[1]) == 2
        assert w.dtype == np.float16 and master.dtype == np.float32
        np.testing.assert_allclose(master.asnumpy(), masters[i], rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(w.asnumpy(), master.asnumpy().astype(np.float16))


def test_single_update_api_of_a_builtin():
    opt = mx.optimizer.NAG(learning_rate=0.1, momentum=0.9)
    w, g = mx.nd.array([1.0, -1.0]), mx.nd.array([0.5, 0.25])
    state = opt.create_state(0, w)
    assert isinstance(state, mx.nd.NDArray) and state.asnumpy().tolist() == [0.0, 0.0]
    opt.update(0, w, g, state)
    g_np = np.array([0.5, 0.25])
    mom = -0.1 * g_np  # momentum * 0 - lr * grad
    np.testing.assert_allclose(state.asnumpy(), mom, rtol=1e-6)
    np.testing.assert_allclose(w.asnumpy(), np.array([1.0, -1.0]) + 0.9 * mom - 0.1 * g_np, rtol=1e-6)
    assert mx.optimizer.SGD().create_state(0, w) is None


# ----- optimizers written in Python ------------------------------------------------------

@mx.optimizer.register
class HalfStepSGD(mx.optimizer.Optimizer):
    """A user optimizer: w -= lr * (g * rescale_grad + wd * w) / 2, with a step counter state."""

    def __init__(self, shrink=0.5, **kwargs):
        super().__init__(**kwargs)
        self.shrink = shrink

    def create_state(self, index, weight):
        return (mx.nd.zeros(weight.shape), mx.nd.zeros(weight.shape))

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        total, last = state
        step = (grad * self.rescale_grad + weight * wd) * (lr * self.shrink)
        total[:] = total + step
        last[:] = step
        weight[:] = weight - step


def test_python_optimizer_through_get_updater_and_states():
    opt = mx.optimizer.create("halfstepsgd", learning_rate=0.2, wd=0.1, rescale_grad=0.5)
    assert isinstance(opt, HalfStepSGD) and opt.shrink == 0.5
    updater = mx.optimizer.get_updater(opt)
    w = mx.nd.array([1.0, 2.0])
    want = np.array([1.0, 2.0])
    for step in range(3):
        g = np.array([step + 1.0, -1.0])
        updater(0, mx.nd.array(g), w)
        want = want - 0.2 * 0.5 * (g * 0.5 + 0.1 * want)
    np.testing.assert_allclose(w.asnumpy(), want, rtol=1e-6)
    assert opt.num_update == 3 and opt._index_update_count[0] == 3
    blob = updater.get_states(dump_optimizer=True)
    fresh = mx.optimizer.get_updater(mx.optimizer.create("halfstepsgd"))
    with pytest.raises(mx.MXNetError):
        fresh.set_states(blob[:-5])
    assert fresh.states == {} and fresh.optimizer.num_update == 0
    fresh.set_states(blob)
    assert fresh.optimizer.num_update == 3 and fresh.optimizer.lr == 0.2 and fresh.optimizer.shrink == 0.5
    total, last = fresh.states[0]
    np.testing.assert_allclose(total.asnumpy(), np.array([1.0, 2.0]) - want, rtol=1e-6)
    # a user subclass of a built-in that overrides update runs its own update
    class Doubled(mx.optimizer.SGD):
        def update(self, index, weight, grad, state):
            super().update(index, weight, grad * 2, state)

        update_multi_precision = update
    w = mx.nd.array([1.0])
    mx.optimizer.get_updater(Doubled(learning_rate=0.5))(0, mx.nd.array([1.0]), w)
    assert w.asnumpy().tolist() == [0.0]


def test_states_round_trip_continues_identically():
    for name, kwargs in [("sgd", dict(momentum=0.9)), ("adam", {}), ("nadam", {}), ("rmsprop", dict(centered=True))]:
        ws = [mx.nd.array(w) for w in weights0(np.float32)]
        opt = mx.optimizer.create(name, **kwargs)
        up = mx.optimizer.get_updater(opt)
        for step in range(2):
            up.update_multi([0, 1], [mx.nd.array(g, dtype=np.float32) for g in grads(step)], ws)
        blob = up.get_states(dump_optimizer=False)
        cont = [w.copy() for w in ws]
        up.update_multi([0, 1], [mx.nd.array(g, dtype=np.float32) for g in grads(2)], ws)
        up2 = mx.optimizer.get_updater(mx.optimizer.create(name, **kwargs))
        up2.set_states(blob)
        assert up2.optimizer.num_update == 2
        up2.update_multi([0, 1], [mx.nd.array(g, dtype=np.float32) for g in grads(2)], cont)
        for a, b in zip(ws, cont):
            np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
        # corrupt or foreign blobs raise and change nothing
        before = {i: [a.asnumpy() for a in (s if isinstance(s, tuple) else [s])] for i, s in up2.states.items()}
        for bad in [b"", b"junk" * 10, blob[:40], blob[:-1]]:
            with pytest.raises(mx.MXNetError):
                up2.set_states(bad)
        other = mx.optimizer.get_updater(mx.optimizer.create("adagrad" if name != "adagrad" else "sgd"))
        with pytest.raises(mx.MXNetError, match=name):
            other.set_states(blob)
        after = {i: [a.asnumpy() for a in (s if isinstance(s, tuple) else [s])] for i, s in up2.states.items()}
        assert before.keys() == after.keys() and all(
            np.array_equal(x, y) for i in before for x, y in zip(before[i], after[i]))
    # dump_optimizer restores hyper-parameters too
    opt = mx.optimizer.create("sgd", learning_rate=0.3, momentum=0.7, wd=0.01)
    up = mx.optimizer.get_updater(opt)
    up(0, mx.nd.array([1.0]), mx.nd.array([1.0]))
    up2 = mx.optimizer.get_updater(mx.optimizer.create("sgd"))
    up2.set_states(up.get_states(dump_optimizer=True))
    assert (up2.optimizer.lr, up2.optimizer.momentum, up2.optimizer.wd) == (0.3, 0.7, 0.01)


def test_errors():
    with pytest.raises(ValueError, match="Cannot find optimizer nosuch"):
        mx.optimizer.create("nosuch")
    with pytest.raises(TypeError, match="beta3"):
        mx.optimizer.create("adam", beta3=0.1)
    with pytest.raises(mx.MXNetError, match="momentum"):
        mx.optimizer.create("sgd", momentum="fast")
    opt = mx.optimizer.create("sgd", lr_scheduler=mx.lr_scheduler.FactorScheduler(step=2))
    with pytest.raises(UserWarning):
        opt.set_learning_rate(0.1)
    with pytest.raises(mx.MXNetError, match="as many"):
        mx.optimizer.get_updater(opt).update_multi([0, 1], [mx.nd.array([1.0])], [mx.nd.array([1.0])])
    with pytest.raises(mx.MXNetError, match="shape"):
        mx.optimizer.get_updater(opt)(0, mx.nd.array([1.0, 2.0]), mx.nd.array([1.0]))
    with pytest.raises(NotImplementedError):
        mx.optimizer.Optimizer().update(0, mx.nd.array([1.0]), mx.nd.array([1.0]), None)


# ----- learning-rate schedulers --------------------------------------------------------

def test_schedulers_hand_computed():
    f = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=1.0, stop_factor_lr=0.2)
    assert [f(n) for n in range(1, 9)] == [1.0, 1.0, 0.5, 0.5, 0.25, 0.25, 0.2, 0.2]
    assert f.base_lr == 0.2 and f.count == 6
    m = mx.lr_scheduler.MultiFactorScheduler(step=[2, 5], factor=0.1, base_lr=1.0)
    np.testing.assert_allclose([m(n) for n in range(1, 8)], [1.0, 1.0, 0.1, 0.1, 0.1, 0.01, 0.01])
    p = mx.lr_scheduler.PolyScheduler(max_update=4, base_lr=2.0, pwr=2, final_lr=0.0)
    np.testing.assert_allclose([p(n) for n in range(6)], [2.0, 1.125, 0.5, 0.125, 0.0, 0.0])
    c = mx.lr_scheduler.CosineScheduler(max_update=4, base_lr=1.0, final_lr=0.0)
    np.testing.assert_allclose([c(n) for n in range(5)], [1.0, (1 + math.cos(math.pi / 4)) / 2, 0.5,
                                                         (1 + math.cos(3 * math.pi / 4)) / 2, 0.0])
    # warm-up: linear from warmup_begin_lr to base_lr, or constant
    w = mx.lr_scheduler.CosineScheduler(max_update=6, base_lr=1.0, warmup_steps=2, warmup_begin_lr=0.2)
    np.testing.assert_allclose([w(n) for n in range(4)], [0.2, 0.6, 1.0, (1 + math.cos(math.pi / 4)) / 2])
    k = mx.lr_scheduler.FactorScheduler(step=10, base_lr=1.0, warmup_steps=3, warmup_begin_lr=0.1,
                                        warmup_mode="constant")
    assert [k(n) for n in range(5)] == [0.1, 0.1, 0.1, 1.0, 1.0]
    for bad in [dict(step=0), dict(step=1, factor=2.0), dict(step=1, warmup_mode="cubic"),
                dict(step=1, base_lr=0.1, warmup_begin_lr=0.5)]:
        with pytest.raises(ValueError):
            mx.lr_scheduler.FactorScheduler(**bad)
    with pytest.raises(ValueError):
        mx.lr_scheduler.MultiFactorScheduler(step=[3, 2])


def test_scheduler_drives_an_optimizer():
    sched = mx.lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=1.0)
    with pytest.warns(UserWarning, match="overwritten"):
        opt = mx.optimizer.create("sgd", lr_scheduler=sched, learning_rate=0.8)
    assert sched.base_lr == 0.8  # an explicit learning rate replaces the scheduler's, as in MXNet
    w, g = mx.nd.array([0.0]), mx.nd.array([1.0])
    up = mx.optimizer.get_updater(opt)
    for _ in range(3):
        up(0, g, w)
    np.testing.assert_allclose(w.asnumpy(), [-(0.8 + 0.4 + 0.2)], rtol=1e-6)
    assert opt.learning_rate == 0.2 and opt.lr_scheduler is sched

    class Halving(mx.lr_scheduler.LRScheduler):
        def __call__(self, num_update):
            return self.base_lr / 2 ** num_update

    opt = mx.optimizer.create("sgd", lr_scheduler=Halving(base_lr=1.0))
    w = mx.nd.array([0.0])
    up = mx.optimizer.get_updater(opt)
    for _ in range(3):
        up(0, g, w)
    np.testing.assert_allclose(w.asnumpy(), [-(0.5 + 0.25 + 0.125)], rtol=1e-6)

    class Broken(mx.lr_scheduler.LRScheduler):
        def __call__(self, num_update):
            raise KeyError("no rate today")

    with pytest.raises(KeyError, match="no rate today"):
        mx.optimizer.get_updater(mx.optimizer.create("sgd", lr_scheduler=Broken()))(0, g, w)


def test_optimizer_pickles():
    opt = mx.optimizer.create("adam", learning_rate=0.02, beta1=0.8, param_idx2name={0: "a_bias"})
    opt._update_count(0)
    back = pickle.loads(pickle.dumps(opt))
    assert (back.lr, back.beta1, back.num_update, back.idx2name, back._get_wd(0)) == (0.02, 0.8, 1, {0: "a_bias"},
                                                                                      0.0)


# ----- cross-check with MXNet 1.9.1 ----------------------------------------------------

MXNET_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import mxnet as mx
    data = json.loads(sys.stdin.read())
    out = {}
    for name, kwargs in data["optimizers"]:
        opt = mx.optimizer.create(name, **kwargs)
        up = mx.optimizer.get_updater(opt)
        ws = [mx.nd.array(w) for w in data["weights"]]
        for step in data["grads"]:
            for i, g in enumerate(step):
                up(i, mx.nd.array(g), ws[i])
        out[name + json.dumps(kwargs, sort_keys=True)] = [w.asnumpy().tolist() for w in ws]
    print(json.dumps(out))
""")

CROSS = [
    ("sgd", dict(learning_rate=0.1, momentum=0.9, wd=0.01, rescale_grad=0.5, clip_gradient=0.8)),
    ("adam", dict(learning_rate=0.01, wd=0.01, rescale_grad=0.5, clip_gradient=0.8)),
    ("rmsprop", dict(learning_rate=0.01, centered=True, wd=0.01, rescale_grad=0.5)),
    ("ftrl", dict(learning_rate=0.1, lamda1=0.01, wd=0.01, rescale_grad=0.5, clip_gradient=0.8)),
]


def test_same_weights_as_mxnet():
    if not MXNET_PYTHON.exists():
        pytest.skip("MXNet 1.9.1 side environment .venv-mxnet is missing (scripts/test.sh creates it)")
    weights = [w.astype(np.float32) for w in weights0()]
    steps = [[g.astype(np.float32) for g in grads(s)] for s in range(3)]
    payload = {"optimizers": CROSS, "weights": [w.tolist() for w in weights],
               "grads": [[g.tolist() for g in step] for step in steps]}
    result = subprocess.run([str(MXNET_PYTHON), "-c", MXNET_SCRIPT], input=json.dumps(payload),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    theirs = json.loads(result.stdout.strip().splitlines()[-1])
    for name, kwargs in CROSS:
        opt = mx.optimizer.create(name, **kwargs)
        up = mx.optimizer.get_updater(opt)
        ws = [mx.nd.array(w) for w in weights]
        for step in steps:
            for i, g in enumerate(step):
                up(i, mx.nd.array(g), ws[i])
        for mine, ref in zip(ws, theirs[name + json.dumps(kwargs, sort_keys=True)]):
            np.testing.assert_allclose(mine.asnumpy(), np.array(ref, dtype=np.float32), rtol=1e-5, atol=1e-5,
                                       err_msg=name)


def _multi_tensor_inputs():
    w = [mx.nd.array([0.5, -1.0, 2.0]), mx.nd.array([[0.25, -0.75], [1.5, 0.1]])]
    g = [mx.nd.array([0.1, 0.2, -0.3]), mx.nd.array([[-0.4, 0.05], [0.2, -0.1]])]
    m = [mx.nd.array([0.01, 0.0, -0.02]), mx.nd.zeros((2, 2))]
    v = [mx.nd.array([0.001, 0.002, 0.0]), mx.nd.ones((2, 2)) * 0.01]
    return w, g, m, v


def test_contrib_multi_tensor_wrappers_match_mxnet():
    # values computed with MXNet 1.9.1's mx.nd.contrib wrappers on these inputs
    w, g, m, v = _multi_tensor_inputs()
    mx.nd.contrib.multi_adamw_update(w, g, m, v, rescale_grad=0.5, lrs=[0.1, 0.05], wds=[0.01, 0.0],
                                     etas=[1.0, 0.5], out=w, beta1=0.9, beta2=0.99, epsilon=1e-8)
    np.testing.assert_allclose(w[0].asnumpy(), [0.45105648, -1.01192641, 2.19999981], rtol=1e-6)
    np.testing.assert_allclose(w[1].asnumpy(), [[0.25492665, -0.75062793], [1.49749994, 0.10125472]], rtol=1e-6)
    np.testing.assert_allclose(m[0].asnumpy(), [0.014, 0.01000001, -0.033], rtol=1e-6)
    np.testing.assert_allclose(v[1].asnumpy(), [[0.0103, 0.00990625], [0.01, 0.009925]], rtol=1e-5)
    w, g, m, v = _multi_tensor_inputs()
    mx.nd.contrib.multi_lamb_update(w, g, m, v, step_count=[1, 3], lrs=[0.1, 0.05], wds=[0.01, 0.0], out=w,
                                    beta1=0.9, beta2=0.99, epsilon=1e-6)
    np.testing.assert_allclose(w[0].asnumpy(), [0.42312261, -1.05296862, 2.20924664], rtol=1e-6)
    np.testing.assert_allclose(w[1].asnumpy(), [[0.32258126, -0.7597661], [1.46165359, 0.11945868]], rtol=1e-6)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_dcasgd_matches_its_formula(momentum):
    rng = np.random.RandomState(0)
    w0 = rng.normal(size=(3, 4)).astype(np.float32)
    grads = [rng.normal(size=(3, 4)).astype(np.float32) for _ in range(3)]
    opt = mx.optimizer.create("dcasgd", learning_rate=0.1, momentum=momentum, lamda=0.5, wd=0.01,
                              rescale_grad=0.5)
    weight = mx.nd.array(w0)
    state = opt.create_state(0, weight)
    w, prev, mom = w0.astype(np.float64), w0.astype(np.float64), np.zeros_like(w0, dtype=np.float64)
    for g in grads:
        opt.update(0, weight, mx.nd.array(g), state)
        g = g * 0.5
        step = -0.1 * (g + 0.01 * w + 0.5 * g * g * (w - prev))
        mom = momentum * mom + step if momentum else step
        prev, w = w, w + mom
    np.testing.assert_allclose(weight.asnumpy(), w, rtol=1e-5, atol=1e-6)
