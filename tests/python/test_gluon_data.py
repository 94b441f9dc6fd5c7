"""mx.gluon.data: datasets and their transforms, samplers, and the DataLoader
in this thread, in worker processes and in worker threads."""

import numpy as np
import pytest

import oxnet as mx
from oxnet import nd
from oxnet.gluon import data as gdata

X = np.arange(30, dtype=np.float32).reshape(10, 3)
Y = np.arange(10) * 10


# Module-level helpers (forked workers would take local ones too; see
# test_dataloader_workers.py).

def double_first(x, y):
    """A transform with an oxnet operator in it (it must work in workers)."""
    return nd.broadcast_mul(x, nd.array([2.0])), y


def with_product(x):
    """A transform running a product big enough to use oxnet's thread pool."""
    big = nd.dot(nd.ones((384, 384)), nd.ones((384, 384)))
    return x + nd.slice_axis(nd.sum(big, axis=1), axis=0, begin=0, end=1) * 0


class FailingDataset(gdata.Dataset):
    """Ten samples; reading sample 5 raises."""

    def __len__(self):
        return 10

    def __getitem__(self, idx):
        if idx == 5:
            raise ValueError(f"bad sample {idx}")
        return np.float32(idx)


class PairsDataset(gdata.Dataset):
    """Samples that are tuples of an NDArray, a number and a nested tuple."""

    def __len__(self):
        return 6

    def __getitem__(self, idx):
        return nd.array([idx, -idx]), float(idx) / 2, (idx, np.full(2, idx, dtype=np.int32))


def _collect(loader):
    """The batches of one pass as (nested) lists of numpy arrays."""
    def as_np(b):
        if isinstance(b, (list, tuple)):
            return [as_np(x) for x in b]
        return b.asnumpy() if isinstance(b, nd.NDArray) else np.asarray(b)
    return [as_np(b) for b in loader]


def _assert_same_batches(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, list):
            _assert_same_batches(x, y)
        else:
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x, y)


# ----- datasets ------------------------------------------------------------------------

def test_array_dataset_zips_ndarrays_numpy_and_lists():
    ds = gdata.ArrayDataset(nd.array(X), Y, list("abcdefghij"))
    assert len(ds) == 10
    x, y, c = ds[3]
    assert isinstance(x, nd.NDArray) and x.asnumpy().tolist() == [9, 10, 11]
    assert y == 30 and c == "d"
    single = gdata.ArrayDataset(nd.array(Y.astype(np.float32)))
    assert single[2] == 20.0 and not isinstance(single[2], nd.NDArray)  # 1-D NDArrays give numbers
    assert [s for s in gdata.SimpleDataset([4, 5, 6])] == [4, 5, 6]
    with pytest.raises(ValueError, match="array 0 has length 10 but array 1 has length 4"):
        gdata.ArrayDataset(X, [1, 2, 3, 4])
    with pytest.raises(ValueError, match="at least one"):
        gdata.ArrayDataset()


def test_transform_lazy_and_eager():
    calls = []

    def fn(x, y):
        calls.append(y)
        return x + 1, -y

    ds = gdata.ArrayDataset(X, Y)
    lazy = ds.transform(fn)
    assert calls == []
    x, y = lazy[2]
    np.testing.assert_array_equal(x, X[2] + 1)
    assert y == -20 and calls == [20]
    lazy[2]
    assert calls == [20, 20]  # runs again on each read
    calls.clear()
    eager = ds.transform(fn, lazy=False)
    assert calls == list(Y)
    eager[4]
    eager[4]
    assert len(calls) == 10 and eager[4][1] == -40
    first = ds.transform_first(lambda x: x * 0)
    x, y = first[7]
    assert x.tolist() == [0, 0, 0] and y == 70
    plain = gdata.SimpleDataset([1, 2, 3]).transform_first(lambda v: v * 10)
    assert [plain[i] for i in range(3)] == [10, 20, 30]


def test_filter_shard_take_and_sample():
    ds = gdata.SimpleDataset(list(range(10)))
    evens = ds.filter(lambda v: v % 2 == 0)
    assert list(evens) == [0, 2, 4, 6, 8]
    shards = [list(ds.shard(3, i)) for i in range(3)]
    assert shards == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert list(ds.shard(4, 3)) == [8, 9]
    with pytest.raises(ValueError, match="index 3 is out of range for 3 shards"):
        ds.shard(3, 3)
    assert list(ds.take(3)) == [0, 1, 2]
    assert len(ds.take(None)) == 10 and len(ds.take(50)) == 10
    assert list(ds.sample(gdata.IntervalSampler(10, 4))) == [0, 4, 8, 1, 5, 9, 2, 6, 3, 7]
    with pytest.raises(TypeError, match="expected a gluon.data.Sampler"):
        ds.sample([1, 2])


# ----- samplers ------------------------------------------------------------------------

def test_sequential_random_and_interval_samplers():
    assert list(gdata.SequentialSampler(4, start=3)) == [3, 4, 5, 6]
    np.random.seed(7)
    first = list(gdata.RandomSampler(10))
    np.random.seed(7)
    assert first == np.random.permutation(10).tolist()  # numpy's global generator
    assert sorted(first) == list(range(10))
    sampler = gdata.IntervalSampler(7, 3)
    assert list(sampler) == [0, 3, 6, 1, 4, 2, 5] and len(sampler) == 7
    no_roll = gdata.IntervalSampler(7, 3, rollover=False)
    assert list(no_roll) == [0, 3, 6] and len(no_roll) == 3
    with pytest.raises(ValueError, match="must not exceed length"):
        gdata.IntervalSampler(3, 4)


@pytest.mark.parametrize("mode, epochs", [
    ("keep", [[[0, 1, 2], [3, 4, 5], [6]], [[0, 1, 2], [3, 4, 5], [6]]]),
    ("discard", [[[0, 1, 2], [3, 4, 5]], [[0, 1, 2], [3, 4, 5]]]),
    ("rollover", [[[0, 1, 2], [3, 4, 5]], [[6, 0, 1], [2, 3, 4]], [[5, 6, 0], [1, 2, 3], [4, 5, 6]]]),
])
def test_batch_sampler_last_batch_modes(mode, epochs):
    sampler = gdata.BatchSampler(gdata.SequentialSampler(7), 3, mode)
    for expected in epochs:
        assert len(sampler) == len(expected)
        assert list(sampler) == expected


def test_batch_sampler_lengths_and_errors():
    roll = gdata.BatchSampler(gdata.SequentialSampler(7), 3, "rollover")
    assert len(roll) == 2
    list(roll)  # carries [6]
    assert len(roll) == 2  # (1 + 7) // 3
    list(roll)  # carries [5, 6]
    assert len(roll) == 3  # (2 + 7) // 3
    with pytest.raises(ValueError, match="last_batch must be one of"):
        gdata.BatchSampler(gdata.SequentialSampler(7), 3, "pad")
    with pytest.raises(ValueError, match="batch_size must be positive"):
        gdata.BatchSampler(gdata.SequentialSampler(7), 0)


# ----- DataLoader in the calling thread ------------------------------------------------

def test_dataloader_batches_in_order():
    loader = gdata.DataLoader(gdata.ArrayDataset(nd.array(X), Y), batch_size=4)
    assert len(loader) == 3
    batches = list(loader)
    assert [b[0].shape for b in batches] == [(4, 3), (4, 3), (2, 3)]
    for i, (x, y) in enumerate(batches):
        np.testing.assert_array_equal(x.asnumpy(), X[4 * i:4 * i + 4])
        assert y.dtype == np.int64
        np.testing.assert_array_equal(y.asnumpy(), Y[4 * i:4 * i + 4])
    discard = gdata.DataLoader(X, batch_size=4, last_batch="discard")
    assert [b.shape for b in discard] == [(4, 3), (4, 3)]
    roll = gdata.DataLoader(X, batch_size=4, last_batch="rollover")
    assert len(list(roll)) == 2
    first_of_second = next(iter(roll)).asnumpy()
    np.testing.assert_array_equal(first_of_second, X[[8, 9, 0, 1]])


def test_dataloader_shuffle_follows_numpy_seed():
    loader = gdata.DataLoader(gdata.ArrayDataset(X, Y), batch_size=3, shuffle=True)
    np.random.seed(3)
    order = np.random.permutation(10)
    np.random.seed(3)
    labels = np.concatenate([y.asnumpy() for _, y in loader])
    np.testing.assert_array_equal(labels, Y[order])
    np.random.seed(4)
    assert not np.array_equal(np.concatenate([y.asnumpy() for _, y in loader]), labels)


def test_dataloader_argument_errors():
    with pytest.raises(ValueError, match="batch_size must be given"):
        gdata.DataLoader(X)
    with pytest.raises(ValueError, match="shuffle must not be given together with sampler"):
        gdata.DataLoader(X, 2, shuffle=True, sampler=gdata.SequentialSampler(10))
    with pytest.raises(ValueError, match="must not be given together with batch_sampler"):
        gdata.DataLoader(X, 2, batch_sampler=gdata.BatchSampler(gdata.SequentialSampler(10), 2))
    custom = gdata.DataLoader(X, batch_sampler=gdata.BatchSampler(gdata.SequentialSampler(10, 4), 5))
    np.testing.assert_array_equal(next(iter(custom)).asnumpy(), X[4:9])


def test_default_batchify_of_tuples_numbers_and_arrays():
    batch = gdata.default_batchify_fn([PairsDataset()[i] for i in range(3)])
    arrays, halves, (ints, vectors) = batch
    np.testing.assert_array_equal(arrays.asnumpy(), [[0, 0], [1, -1], [2, -2]])
    assert halves.dtype == np.float64 and halves.asnumpy().tolist() == [0.0, 0.5, 1.0]
    assert ints.dtype == np.int64 and ints.asnumpy().tolist() == [0, 1, 2]
    assert vectors.dtype == np.int32 and vectors.shape == (3, 2)
    with pytest.raises(ValueError, match="cannot be stacked"):
        gdata.default_batchify_fn([np.zeros(2), np.zeros(3)])
    summed = gdata.DataLoader(X, batch_size=5, batchify_fn=lambda samples: float(np.sum(samples)))
    assert list(summed) == [float(X[:5].sum()), float(X[5:].sum())]


# ----- workers -------------------------------------------------------------------------

@pytest.mark.parametrize("thread_pool", [False, True], ids=["processes", "threads"])
@pytest.mark.parametrize("prefetch", [None, 0])
def test_workers_give_the_same_batches_as_the_calling_thread(thread_pool, prefetch):
    # A big product first: the main process' thread pool is running when workers start.
    nd.dot(nd.ones((256, 256)), nd.ones((256, 256))).wait_to_read()
    ds = gdata.ArrayDataset(nd.array(X), Y).transform(double_first)
    reference = _collect(gdata.DataLoader(ds, batch_size=3, last_batch="keep"))
    loader = gdata.DataLoader(ds, batch_size=3, num_workers=2, thread_pool=thread_pool, prefetch=prefetch,
                              timeout=60)
    _assert_same_batches(_collect(loader), reference)
    _assert_same_batches(_collect(loader), reference)  # a second epoch reuses the pool
    pairs = PairsDataset()
    _assert_same_batches(
        _collect(gdata.DataLoader(pairs, batch_size=4, num_workers=2, thread_pool=thread_pool, timeout=60)),
        _collect(gdata.DataLoader(pairs, batch_size=4)),
    )


def test_worker_processes_run_parallel_operators_after_the_main_process_did():
    # A forked worker inherits oxnet's thread pool without its threads: the pool must
    # notice and run the product inline instead of waiting for helpers that are not there.
    nd.dot(nd.ones((384, 384)), nd.ones((384, 384))).wait_to_read()
    ds = gdata.SimpleDataset([nd.array([float(i)]) for i in range(4)]).transform(with_product)
    loader = gdata.DataLoader(ds, batch_size=2, num_workers=2, timeout=60)
    assert [b.asnumpy().ravel().tolist() for b in loader] == [[0.0, 1.0], [2.0, 3.0]]


@pytest.mark.parametrize("thread_pool", [False, True], ids=["processes", "threads"])
def test_workers_keep_the_shuffled_order(thread_pool):
    ds = gdata.ArrayDataset(X, Y)
    np.random.seed(11)
    reference = _collect(gdata.DataLoader(ds, batch_size=2, shuffle=True))
    loader = gdata.DataLoader(ds, batch_size=2, shuffle=True, num_workers=3, thread_pool=thread_pool, timeout=60)
    np.random.seed(11)
    _assert_same_batches(_collect(loader), reference)


@pytest.mark.parametrize("thread_pool", [False, True], ids=["processes", "threads"])
def test_a_worker_error_reaches_the_caller(thread_pool):
    loader = gdata.DataLoader(FailingDataset(), batch_size=2, num_workers=2, thread_pool=thread_pool, timeout=60)
    it = iter(loader)
    np.testing.assert_array_equal(next(it).asnumpy(), [0, 1])
    np.testing.assert_array_equal(next(it).asnumpy(), [2, 3])
    with pytest.raises(ValueError, match="bad sample 5"):
        next(it)
    # the loader stays usable: a fresh pass fails at the same place again
    with pytest.raises(ValueError, match="bad sample 5"):
        list(loader)


def test_unpicklable_dataset_needs_fork_or_threads():
    ds = gdata.SimpleDataset(list(range(6))).transform(lambda v: v + 1)
    with pytest.raises(mx.MXNetError, match="picklable"):
        gdata.DataLoader(ds, batch_size=2, num_workers=1, start_method="spawn")
    if gdata.dataloader.DEFAULT_START_METHOD == "fork":
        forked = gdata.DataLoader(ds, batch_size=2, num_workers=2, timeout=60)
        assert [b.asnumpy().tolist() for b in forked] == [[1, 2], [3, 4], [5, 6]]
    threaded = gdata.DataLoader(ds, batch_size=2, num_workers=2, thread_pool=True)
    assert [b.asnumpy().tolist() for b in threaded] == [[1, 2], [3, 4], [5, 6]]


def test_auto_reload_and_len():
    loader = gdata.DataLoader(X, batch_size=4, num_workers=1, thread_pool=True, auto_reload=True)
    assert len(loader) == 3
    for _ in range(2):
        assert [b.shape[0] for b in loader] == [4, 4, 2]
