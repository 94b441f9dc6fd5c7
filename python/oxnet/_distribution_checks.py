"""``mx.test_utils``' statistical checks of random generators: buckets from
a quantile function, mean and variance ranges, and the chi-square test
repeated over several draws (imported from :mod:`oxnet.test_utils`)."""

import numpy as np


def gen_buckets_probs_with_ppf(ppf, nbuckets):
    """``nbuckets`` equally likely buckets ``(lo, hi)`` from the quantile
    function ``ppf``, and their probabilities."""
    assert nbuckets > 0
    edges = [ppf(i / float(nbuckets)) for i in range(nbuckets + 1)]
    return list(zip(edges[:-1], edges[1:])), [1.0 / nbuckets] * nbuckets


def mean_check(generator, mu, sigma, nsamples=1000000):
    """Whether the mean of ``generator(nsamples)`` lies within three
    standard errors of ``mu``."""
    mean = np.asarray(generator(nsamples)).mean()
    bound = 3 * sigma / np.sqrt(nsamples)
    return bool(mu - bound < mean < mu + bound)


def var_check(generator, sigma, nsamples=1000000):
    """Whether the sample variance of ``generator(nsamples)`` lies within
    three standard errors of ``sigma**2``."""
    var = np.asarray(generator(nsamples)).var(ddof=1)
    bound = 3 * np.sqrt(2 * sigma ** 4 / (nsamples - 1))
    return bool(sigma ** 2 - bound < var < sigma ** 2 + bound)


def _bucket_counts(samples, buckets):
    samples = np.asarray(samples).ravel()
    if isinstance(buckets[0], (list, tuple)):
        # continuous: ranges in ascending order, no overlap
        edges = []
        for i, (lo, hi) in enumerate(buckets):
            assert lo <= hi, f"bucket {i} runs backwards: ({lo}, {hi})"
            if i + 1 < len(buckets):
                assert hi <= buckets[i + 1][0], f"buckets {i} and {i + 1} overlap"
            edges += [lo, hi]
        ids = np.searchsorted(np.asarray(edges, dtype=np.float64), samples, side="right")
        # a sample in bucket i lands between edges 2i and 2i+1 (id 2i+1)
        return np.array([(ids == 2 * i + 1).sum() for i in range(len(buckets))], dtype=np.int64)
    return np.array([(samples == b).sum() for b in buckets], dtype=np.int64)


def chi_square_check(generator, buckets, probs, nsamples=1000000):
    """Chi-square test of ``generator(nsamples)`` against the bucket
    probabilities. Returns ``(p, observed counts, expected counts)``."""
    from scipy import stats

    assert isinstance(buckets, list) and len(probs) == len(buckets)
    observed = _bucket_counts(generator(nsamples), buckets)
    probs = np.asarray(probs, dtype=np.float64)
    expected = nsamples * probs
    # the test compares shapes: scale the expectation to the counted total
    # (samples outside every bucket, if any, are left out of both)
    if observed.sum() > 0:
        expected = expected * observed.sum() / expected.sum()
    _, p = stats.chisquare(f_obs=observed, f_exp=expected)
    return p, observed, expected


def verify_generator(generator, buckets, probs, nsamples=1000000, nrepeat=5, success_rate=0.2, alpha=0.05):
    """Runs :func:`chi_square_check` ``nrepeat`` times; raises AssertionError
    unless at least ``success_rate`` of the runs have p above ``alpha``.
    Returns the p values."""
    runs = [chi_square_check(generator, buckets, probs, nsamples) for _ in range(nrepeat)]
    pvalues = [r[0] for r in runs]
    if sum(p > alpha for p in pvalues) < nrepeat * success_rate:
        raise AssertionError(
            f"Generator test fails, Chi-square p={pvalues}, obs_freq={[r[1].tolist() for r in runs]}, "
            f"expected_freq={[r[2].tolist() for r in runs]}.\nbuckets={buckets}, probs={list(probs)}")
    return pvalues
