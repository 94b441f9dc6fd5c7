"""A character-level language model: a 2-layer LSTM (gluon.rnn.LSTM on the
fused RNN operator) learns text generated from a small English grammar,
with truncated backpropagation through time, for a fixed time budget; it
prints the perplexity as it falls and then samples a sentence.

Run: python examples/python/char_lm.py [--seconds 60]
"""

import argparse
import math
import sys
import time

import numpy as np
import oxnet as mx
from oxnet import autograd, gluon, nd

SUBJECTS = ["the cat", "a dog", "my friend", "the old man", "a small bird", "the teacher", "her brother"]
VERBS = ["sees", "likes", "finds", "follows", "paints", "calls", "visits"]
OBJECTS = ["the river", "a red house", "the green hill", "an apple", "the market", "a quiet town"]
ENDINGS = ["", " today", " at night", " in the morning", " again"]


def corpus(chars=60000, seed=0):
    """Sentences from the grammar above until the text has ``chars`` characters."""
    rng = np.random.RandomState(seed)
    parts, size = [], 0
    while size < chars:
        s = (f"{SUBJECTS[rng.randint(len(SUBJECTS))]} {VERBS[rng.randint(len(VERBS))]} "
             f"{OBJECTS[rng.randint(len(OBJECTS))]}{ENDINGS[rng.randint(len(ENDINGS))]}. ")
        parts.append(s)
        size += len(s)
    return "".join(parts)[:chars]


class CharLM(gluon.Block):
    """Embedding, a 2-layer LSTM and a Dense layer over the vocabulary; the
    LSTM is hybridized (one fused operator call per sequence)."""

    def __init__(self, vocab, embed=32, hidden=128, layers=2, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.embed = gluon.nn.Embedding(vocab, embed)
            self.lstm = gluon.rnn.LSTM(hidden, num_layers=layers, layout="TNC")
            self.out = gluon.nn.Dense(vocab, flatten=False)

    def forward(self, x, states):
        y, states = self.lstm(self.embed(x), states)
        return self.out(y), states


def batches(ids, batch, steps):
    """(input, target) pairs of shape (steps, batch): ``batch`` parallel
    streams through the text, cut into windows of ``steps``."""
    n = (len(ids) - 1) // batch
    x = ids[:n * batch].reshape(batch, n).T
    y = ids[1:n * batch + 1].reshape(batch, n).T
    for t in range(0, n - steps + 1, steps):
        yield x[t:t + steps], y[t:t + steps]


def sample(net, vocab, start="the ", length=60, seed=0):
    """Continues ``start`` one character at a time, drawing each from the
    model's distribution."""
    rng = np.random.RandomState(seed)
    index = {c: i for i, c in enumerate(vocab)}
    states = net.lstm.begin_state(batch_size=1)
    text = start
    logits = None
    for c in start:
        logits, states = net(nd.array([[index[c]]]), states)
    for _ in range(length):
        p = nd.softmax(logits[-1, 0]).asnumpy().astype(np.float64)
        c = vocab[rng.choice(len(vocab), p=p / p.sum())]
        text += c
        logits, states = net(nd.array([[index[c]]]), states)
    return text


def progress(done, total, ppl, width=30):
    """One line redrawn in place: a bar, the share done and the perplexity."""
    filled = int(width * min(done / total, 1.0))
    sys.stdout.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {100 * min(done / total, 1.0):5.1f}%  "
                     f"perplexity {ppl:7.3f}")
    sys.stdout.flush()


def main(seconds=60.0, max_steps=None, seed=0, batch=32, steps=35, quiet=False):
    """Trains for ``seconds`` (or ``max_steps`` updates); returns the
    perplexity of each report (every 25 updates) and a sampled sentence."""
    mx.random.seed(seed)
    np.random.seed(seed)
    text = corpus(seed=seed)
    vocab = sorted(set(text))
    ids = np.array([vocab.index(c) for c in text], dtype=np.float32)
    net = CharLM(len(vocab))
    net.initialize(mx.init.Xavier())
    net.lstm.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    start, updates, window, reports = time.time(), 0, [], []
    budget = max_steps if max_steps is not None else seconds
    while True:
        states = net.lstm.begin_state(batch_size=batch)
        for x, y in batches(ids, batch, steps):
            states = [s.detach() for s in states]
            with autograd.record():
                logits, states = net(nd.array(x), states)
                loss = loss_fn(logits.reshape((-1, len(vocab))), nd.array(y).reshape((-1,)))
            loss.backward()
            trainer.step(batch * steps)
            window.append(loss.mean().asscalar())
            updates += 1
            if updates % 25 == 0:
                reports.append(math.exp(float(np.mean(window))))
                window = []
                done = updates if max_steps is not None else time.time() - start
                if not quiet:
                    progress(done, budget, reports[-1])
            over = updates >= max_steps if max_steps is not None else time.time() - start >= seconds
            if over:
                break
        if over:
            break
    sentence = sample(net, vocab, seed=seed)
    if not quiet:
        print(f"\n{updates} updates in {time.time() - start:.1f} s; perplexity {reports[0]:.2f} -> "
              f"{reports[-1]:.2f}")
        print(f"sample: {sentence}")
    return reports, sentence


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="training time (default 60)")
    main(seconds=parser.parse_args().seconds)
