"""Gluon layers and losses against numpy, imperative and hybridized."""

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, gluon, nd
from oxnet.gluon import nn

RNG = np.random.default_rng(5)
X = RNG.uniform(-2, 2, (4, 6)).astype(np.float32)


def _both(block, *inputs):
    """The block's output imperative and hybridized (must agree)."""
    block.initialize()
    arrays = [nd.array(a) for a in inputs]
    imperative = block(*arrays).asnumpy()
    block.hybridize()
    hybrid = block(*arrays).asnumpy()
    np.testing.assert_allclose(hybrid, imperative, rtol=1e-6, atol=1e-7)
    return imperative


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


@pytest.mark.parametrize("block, reference", [
    (lambda: nn.Activation("relu"), lambda x: np.maximum(x, 0)),
    (lambda: nn.Activation("tanh"), np.tanh),
    (lambda: nn.Activation("sigmoid"), _sigmoid),
    (lambda: nn.Activation("softrelu"), lambda x: np.log1p(np.exp(x))),
    (lambda: nn.LeakyReLU(0.1), lambda x: np.where(x > 0, x, 0.1 * x)),
    (lambda: nn.ELU(0.5), lambda x: np.where(x > 0, x, 0.5 * (np.exp(x) - 1))),
    (lambda: nn.SELU(), lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * (np.exp(x) - 1))),
    (lambda: nn.Swish(2.0), lambda x: x * _sigmoid(2 * x)),
    (lambda: nn.Flatten(), lambda x: x.reshape(len(x), -1)),
    (lambda: nn.Identity(), lambda x: x),
    (lambda: nn.HybridLambda(lambda F, x: F.exp(x) * 2), lambda x: np.exp(x) * 2),
    (lambda: nn.HybridLambda("tanh"), np.tanh),
])
def test_activation_layers_match_numpy(block, reference):
    np.testing.assert_allclose(_both(block(), X), reference(X), rtol=1e-5, atol=1e-6)


def test_gelu_matches_erf_form():
    from math import erf
    expected = np.vectorize(lambda v: 0.5 * v * (1 + erf(v / np.sqrt(2))))(X)
    np.testing.assert_allclose(_both(nn.GELU(), X), expected, rtol=1e-4, atol=1e-5)


def test_dropout_is_identity_in_predict_mode_and_scales_in_train_mode():
    layer = nn.Dropout(0.5)
    x = nd.ones((200, 50))
    np.testing.assert_array_equal(layer(x).asnumpy(), 1.0)
    with autograd.record(train_mode=True):
        y = layer(x).asnumpy()
    assert set(np.unique(y)) <= {0.0, 2.0}
    assert 0.4 < (y == 0).mean() < 0.6


def test_dense_without_flatten_applies_to_last_axis():
    layer = nn.Dense(3, flatten=False, in_units=6, use_bias=False)
    out = _both(layer, X.reshape(2, 2, 6))
    w = layer.weight.data().asnumpy()
    np.testing.assert_allclose(out, X.reshape(2, 2, 6) @ w.T, rtol=1e-5)


def test_sequential_and_lambda_blocks():
    net = nn.Sequential()
    net.add(nn.Dense(3, in_units=6), nn.Lambda("relu"), nn.Lambda(lambda x: x * 3))
    net.initialize()
    w, b = net[0].weight.data().asnumpy(), net[0].bias.data().asnumpy()
    np.testing.assert_allclose(net(nd.array(X)).asnumpy(), np.maximum(X @ w.T + b, 0) * 3, rtol=1e-5)
    with pytest.raises(mx.MXNetError, match="not found"):
        nn.Lambda("no_such_function")


def _loss(block, *inputs):
    return _both(block, *inputs)


PRED = RNG.uniform(-2, 2, (4, 3)).astype(np.float32)
TARGET = RNG.uniform(-1, 1, (4, 3)).astype(np.float32)
SIGNS = np.sign(RNG.uniform(-1, 1, (4, 3))).astype(np.float32)


def test_l2_and_l1_losses():
    np.testing.assert_allclose(_loss(gluon.loss.L2Loss(), PRED, TARGET), (0.5 * (PRED - TARGET) ** 2).mean(1),
                               rtol=1e-5)
    np.testing.assert_allclose(_loss(gluon.loss.L1Loss(weight=2.0), PRED, TARGET),
                               (2 * np.abs(PRED - TARGET)).mean(1), rtol=1e-5)


def test_l2_loss_with_sample_weight():
    weights = np.array([[1.0], [0.0], [2.0], [0.5]], dtype=np.float32)
    expected = (0.5 * (PRED - TARGET) ** 2 * weights).mean(1)
    np.testing.assert_allclose(_loss(gluon.loss.L2Loss(), PRED, TARGET, weights), expected, rtol=1e-5)


def _log_softmax(x, axis=-1):
    z = x - x.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


def test_softmax_cross_entropy_sparse_and_dense_labels():
    labels = np.array([0, 2, 1, 2], dtype=np.float32)
    expected = -_log_softmax(PRED)[np.arange(4), labels.astype(int)]
    np.testing.assert_allclose(_loss(gluon.loss.SoftmaxCrossEntropyLoss(), PRED, labels), expected, rtol=1e-5)
    dense = np.eye(3, dtype=np.float32)[labels.astype(int)]
    np.testing.assert_allclose(_loss(gluon.loss.SoftmaxCrossEntropyLoss(sparse_label=False), PRED, dense),
                               expected, rtol=1e-5)
    logp = _log_softmax(PRED)
    np.testing.assert_allclose(_loss(gluon.loss.SoftmaxCELoss(from_logits=True), logp, labels), expected,
                               rtol=1e-5)


def test_softmax_cross_entropy_gradient_is_softmax_minus_onehot():
    labels = nd.array([0, 2, 1, 2])
    pred = nd.array(PRED)
    pred.attach_grad()
    with autograd.record():
        loss = gluon.loss.SoftmaxCrossEntropyLoss()(pred, labels)
    loss.backward()
    p = np.exp(_log_softmax(PRED))
    np.testing.assert_allclose(pred.grad.asnumpy(), p - np.eye(3)[[0, 2, 1, 2]], rtol=1e-5, atol=1e-6)


def test_sigmoid_bce_from_logits_and_from_sigmoid():
    labels = (SIGNS > 0).astype(np.float32)
    p = _sigmoid(PRED)
    expected = -(labels * np.log(p) + (1 - labels) * np.log(1 - p)).mean(1)
    np.testing.assert_allclose(_loss(gluon.loss.SigmoidBinaryCrossEntropyLoss(), PRED, labels), expected,
                               rtol=1e-5)
    np.testing.assert_allclose(_loss(gluon.loss.SigmoidBCELoss(from_sigmoid=True), p, labels), expected,
                               rtol=1e-4)


def test_sigmoid_bce_with_pos_weight():
    labels = (SIGNS > 0).astype(np.float32)
    pos_weight = np.array([[2.0, 1.0, 0.5]], dtype=np.float32)
    p = _sigmoid(PRED)
    expected = -(pos_weight * labels * np.log(p) + (1 - labels) * np.log(1 - p)).mean(1)
    loss = gluon.loss.SigmoidBinaryCrossEntropyLoss()
    loss.initialize()
    got = loss(nd.array(PRED), nd.array(labels), None, nd.array(pos_weight)).asnumpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_kl_div_huber_hinge_logistic():
    target = np.exp(_log_softmax(TARGET))
    logp = _log_softmax(PRED)
    np.testing.assert_allclose(_loss(gluon.loss.KLDivLoss(), logp, target),
                               (target * (np.log(target + 1e-12) - logp)).mean(1), rtol=1e-5)
    err = np.abs(PRED - TARGET)
    huber = np.where(err > 1, err - 0.5, 0.5 * err ** 2)
    np.testing.assert_allclose(_loss(gluon.loss.HuberLoss(), PRED, TARGET), huber.mean(1), rtol=1e-5)
    hinge = np.maximum(0, 1 - PRED * SIGNS)
    np.testing.assert_allclose(_loss(gluon.loss.HingeLoss(), PRED, SIGNS), hinge.mean(1), rtol=1e-5)
    np.testing.assert_allclose(_loss(gluon.loss.SquaredHingeLoss(), PRED, SIGNS), (hinge ** 2).mean(1),
                               rtol=1e-5)
    np.testing.assert_allclose(_loss(gluon.loss.LogisticLoss(), PRED, SIGNS),
                               np.log1p(np.exp(-PRED * SIGNS)).mean(1), rtol=1e-5)
    binary = (SIGNS > 0).astype(np.float32)
    np.testing.assert_allclose(_loss(gluon.loss.LogisticLoss(label_format="binary"), PRED, binary),
                               np.log1p(np.exp(-PRED * SIGNS)).mean(1), rtol=1e-5)
    with pytest.raises(ValueError, match="label_format"):
        gluon.loss.LogisticLoss(label_format="other")


def test_triplet_poisson_cosine():
    pos, neg = TARGET, TARGET[::-1].copy()
    triplet = np.maximum(((pos - PRED) ** 2).sum(1) - ((neg - PRED) ** 2).sum(1) + 1, 0)
    np.testing.assert_allclose(_loss(gluon.loss.TripletLoss(), PRED, pos, neg), triplet, rtol=1e-5)
    counts = np.abs(np.round(TARGET * 3)).astype(np.float32)
    poisson = (np.exp(PRED) - counts * PRED).mean()
    np.testing.assert_allclose(_loss(gluon.loss.PoissonNLLLoss(), PRED, counts), poisson, rtol=1e-5)
    labels = np.array([1, -1, 1, -1], dtype=np.float32)
    cos = (PRED * TARGET).sum(1) / (np.linalg.norm(PRED, axis=1) * np.linalg.norm(TARGET, axis=1))
    expected = np.where(labels == 1, 1 - cos, np.maximum(0, cos))
    np.testing.assert_allclose(_loss(gluon.loss.CosineEmbeddingLoss(), PRED, TARGET, labels).reshape(-1),
                               expected, rtol=1e-5, atol=1e-6)


def _ctc_fixture():
    import json
    import pathlib
    path = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "ctc" / "expected.json"
    return json.loads(path.read_text())


@pytest.mark.parametrize("hybridize", [False, True])
def test_ctc_loss_matches_mxnet(hybridize):
    """gluon.loss.CTCLoss (NTC, blank last, lengths, weights) against what
    MXNet 1.9.1 computed (tests/fixtures/ctc, scripts/make_ctc_fixtures.py)."""
    case = _ctc_fixture()["gluon"]
    pred = nd.array(np.array(case["pred"], dtype=np.float32).reshape(case["shape"]))
    pred.attach_grad()
    loss_fn = gluon.loss.CTCLoss(weight=case["weight"])
    if hybridize:
        loss_fn.hybridize()
    with autograd.record():
        loss = loss_fn(pred, nd.array(case["label"]), nd.array(case["pred_lengths"]),
                       nd.array(case["label_lengths"]), nd.array(case["sample_weight"]))
    loss.backward()
    np.testing.assert_allclose(loss.asnumpy(), case["loss"], rtol=2e-5)
    np.testing.assert_allclose(pred.grad.asnumpy().reshape(-1), case["grad"], rtol=2e-5, atol=2e-6)


def test_ctc_loss_layouts_and_padding():
    """TNC / TN layouts give what NTC / NT give; without lengths a label
    ends at its first -1; a bad layout is an error naming it."""
    case = _ctc_fixture()["cases"][1]  # blank last, labels padded with -1, data (T, N, C)
    t, n, c = case["shape"]
    data = np.array(case["data"], dtype=np.float32).reshape(t, n, c)
    label = np.array(case["label"], dtype=np.float32)
    ntc = gluon.loss.CTCLoss()(nd.array(data.transpose(1, 0, 2)), nd.array(label))
    tnc = gluon.loss.CTCLoss(layout="TNC", label_layout="TN")(nd.array(data), nd.array(label.T))
    np.testing.assert_allclose(ntc.asnumpy(), case["loss"], rtol=2e-5)
    np.testing.assert_allclose(tnc.asnumpy(), case["loss"], rtol=2e-5)
    direct = nd.CTCLoss(nd.array(data), nd.array(label), blank_label="last")
    np.testing.assert_allclose(direct.asnumpy(), case["loss"], rtol=2e-5)
    with pytest.raises(mx.MXNetError, match="layout must be 'NTC' or 'TNC'"):
        gluon.loss.CTCLoss(layout="NCT")
    with pytest.raises(mx.MXNetError, match=f"label 0 of example 0 is {c + 1}"):
        nd.ctc_loss(nd.array(data), nd.array([[c + 1, 0], [1, 2], [0, 0]]), blank_label="last")


def test_prelu_and_embedding_layers():
    prelu = nn.PReLU(in_channels=6)
    out = _both(prelu, X)
    np.testing.assert_allclose(out, np.where(X > 0, X, 0.25 * X), rtol=1e-6)
    emb = nn.Embedding(5, 3)
    idx = np.array([[0, 4], [2, 2]], dtype=np.float32)
    out = _both(emb, idx)
    np.testing.assert_array_equal(out, emb.weight.data().asnumpy()[idx.astype(int)])


def test_wrong_input_shape_names_the_block():
    net = nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(nn.Dense(3, in_units=4))
    net.initialize()
    with pytest.raises(mx.MXNetError, match="net: net_dense0: .*FullyConnected.*weight has shape"):
        net(nd.ones((2, 5)))


def test_poisson_nll_compute_full_is_finite_at_zero_counts():
    counts = np.array([[0.0, 1.0, 3.0]], dtype=np.float32)
    pred = np.array([[0.5, -0.2, 1.0]], dtype=np.float32)
    stirling = np.where(counts > 1, counts * np.log(np.maximum(counts, 1)) - counts
                        + 0.5 * np.log(2 * np.maximum(counts, 1) * np.pi), 0)
    expected = (np.exp(pred) - counts * pred + stirling).mean()
    got = _loss(gluon.loss.PoissonNLLLoss(compute_full=True), pred, counts)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_sdml_loss_matches_numpy_and_differentiates():
    rs = np.random.RandomState(3)
    x1, x2 = rs.uniform(-1, 1, (4, 3)), rs.uniform(-1, 1, (4, 3))
    s = 0.3
    d = ((x1[:, None, :] - x2[None, :, :]) ** 2).sum(axis=2)
    logp = -d - np.log(np.exp(-d).sum(axis=1, keepdims=True))
    labels = np.full((4, 4), s / 3) + np.eye(4) * (1 - s - s / 3)
    want = (labels * (np.log(labels + 1e-12) - logp)).mean(axis=1)
    a, b = nd.array(x1, dtype="float64"), nd.array(x2, dtype="float64")
    a.attach_grad()
    with autograd.record():
        loss = gluon.loss.SDMLLoss(smoothing_parameter=s)(a, b)
    loss.backward()
    np.testing.assert_allclose(loss.asnumpy(), want, rtol=1e-10)
    # d/dx1 of sum(loss), by central differences
    eps, num = 1e-6, np.zeros_like(x1)
    for i in np.ndindex(*x1.shape):
        for sign in (1, -1):
            xp = x1.copy()
            xp[i] += sign * eps
            dp = ((xp[:, None, :] - x2[None, :, :]) ** 2).sum(axis=2)
            lp = -dp - np.log(np.exp(-dp).sum(axis=1, keepdims=True))
            num[i] += sign * (labels * (np.log(labels + 1e-12) - lp)).mean(axis=1).sum() / (2 * eps)
    np.testing.assert_allclose(a.grad.asnumpy(), num, rtol=1e-5, atol=1e-8)
    with pytest.raises(mx.base.MXNetError, match="SDMLLoss: x1 and x2"):
        gluon.loss.SDMLLoss()(a, nd.zeros((3, 3)))
