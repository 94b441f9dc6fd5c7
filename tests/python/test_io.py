"""mx.io: NDArrayIter's batches, padding and shuffling for every
last_batch_handle, with the values MXNet 1.9.1 gives for the same calls
(written in below), and the wrapper iterators."""

import numpy as np
import pytest

import oxnet as mx


def _epochs(it, n=3):
    out = []
    for _ in range(n):
        out.append([(b.label[0].asnumpy().astype(int).tolist(), b.pad) for b in it])
        it.reset()
    return out


# MXNet 1.9.1: NDArrayIter(np.arange(10).reshape(5, 2), np.arange(5) * 10, batch_size=bs,
# last_batch_handle=h); labels and pad of every batch over three epochs.
MXNET_EPOCHS = {
    ("pad", 2): [[([0, 10], 0), ([20, 30], 0), ([40, 0], 1)]] * 3,
    ("pad", 3): [[([0, 10, 20], 0), ([30, 40, 0], 1)]] * 3,
    ("discard", 2): [[([0, 10], 0), ([20, 30], 0)]] * 3,
    ("discard", 3): [[([0, 10, 20], 0)]] * 3,
    ("roll_over", 2): [[([0, 10], 0), ([20, 30], 0)], [([40, 0], 1), ([10, 20], 0), ([30, 40], 0)],
                       [([0, 10], 0), ([20, 30], 0)]],
    ("roll_over", 3): [[([0, 10, 20], 0)], [([30, 40, 0], 2), ([10, 20, 30], 0)],
                       [([40, 0, 10], 1), ([20, 30, 40], 0)]],
}


@pytest.mark.parametrize("handle,batch_size", sorted(MXNET_EPOCHS))
def test_ndarrayiter_last_batch_handles_match_mxnet(handle, batch_size):
    it = mx.io.NDArrayIter(np.arange(10).reshape(5, 2), np.arange(5) * 10, batch_size=batch_size,
                           last_batch_handle=handle)
    assert _epochs(it) == MXNET_EPOCHS[(handle, batch_size)]


def test_ndarrayiter_data_rows_follow_labels():
    it = mx.io.NDArrayIter(np.arange(10).reshape(5, 2), np.arange(5), batch_size=3)
    batches = list(it)
    assert batches[1].data[0].asnumpy().tolist() == [[6, 7], [8, 9], [0, 1]]
    assert batches[1].data[0].dtype == np.float32 and batches[1].index is None


def test_ndarrayiter_pads_by_tiling_when_batch_exceeds_data():
    it = mx.io.NDArrayIter(np.arange(3), batch_size=7)
    assert [(b.data[0].asnumpy().astype(int).tolist(), b.pad) for b in it] == [([0, 1, 2, 0, 1, 2, 0], 4)]


def test_ndarrayiter_shuffle_matches_mxnet_with_the_same_numpy_seed():
    np.random.seed(7)
    it = mx.io.NDArrayIter(np.arange(6), np.arange(6) * 10, batch_size=4, shuffle=True)
    got = []
    for _ in range(2):
        got.append([(b.data[0].asnumpy().astype(int).tolist(), b.label[0].asnumpy().astype(int).tolist(), b.pad)
                    for b in it])
        it.reset()
    # MXNet 1.9.1, same calls: each reset shuffles the already shuffled arrays again
    assert got == [[([3, 5, 0, 2], [30, 50, 0, 20], 0), ([1, 4, 3, 5], [10, 40, 30, 50], 2)],
                   [([5, 1, 0, 3], [50, 10, 0, 30], 0), ([4, 2, 5, 1], [40, 20, 50, 10], 2)]]


def test_ndarrayiter_names_and_descriptions():
    it = mx.io.NDArrayIter({"b": np.zeros((4, 3)), "a": np.zeros((4, 1), dtype="int32")},
                           [np.zeros(4), np.ones(4)], batch_size=2)
    assert repr(it.provide_data) == ("[DataDesc[a,(2, 1),<class 'numpy.float32'>,NCHW], "
                                     "DataDesc[b,(2, 3),<class 'numpy.float32'>,NCHW]]")
    assert [d.name for d in it.provide_label] == ["_0_softmax_label", "_1_softmax_label"]
    assert it.provide_label[0] == ("_0_softmax_label", (2,))
    one = mx.io.NDArrayIter(mx.nd.ones((4, 2), dtype="int32"), batch_size=2, data_name="x")
    assert one.provide_data[0].dtype == np.int32 and one.provide_label == []
    assert next(one).label == []


def test_ndarrayiter_label_longer_than_data_is_served_up_to_the_data():
    # as in MXNet, the first data array sets the number of examples
    it = mx.io.NDArrayIter(np.arange(4), {"label": np.arange(8) * 10}, batch_size=2)
    assert [b.label[0].asnumpy().astype(int).tolist() for b in it] == [[0, 10], [20, 30]]


def test_ndarrayiter_bad_arguments():
    with pytest.raises(ValueError, match="last_batch_handle must be one of pad, discard, roll_over"):
        mx.io.NDArrayIter(np.zeros(3), last_batch_handle="keep")
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        mx.io.NDArrayIter(np.zeros(3), batch_size=0)
    with pytest.raises(ValueError, match="data must be given"):
        mx.io.NDArrayIter(None)
    with pytest.raises(TypeError, match="data must be an NDArray"):
        mx.io.NDArrayIter(3.0)
    it = mx.io.NDArrayIter(np.arange(5), batch_size=12, last_batch_handle="roll_over")
    list(it)
    it.reset()
    with pytest.raises(mx.MXNetError, match=r"cannot take examples \[0, 7\) of 5"):
        list(it)


def test_datadesc_and_databatch():
    desc = mx.io.DataDesc("x", (1, 2))
    assert repr(desc) == "DataDesc[x,(1, 2),<class 'numpy.float32'>,NCHW]"
    assert desc == ("x", (1, 2)) and desc.layout == "NCHW"
    assert mx.io.DataDesc.get_batch_axis("TNC") == 1 and mx.io.DataDesc.get_batch_axis(None) == 0
    descs = mx.io.DataDesc.get_list([("a", (1,)), ("b", (2,))], [("a", np.int32), ("b", np.float16)])
    assert [(d.name, d.dtype) for d in descs] == [("a", np.int32), ("b", np.float16)]
    batch = mx.io.DataBatch([mx.nd.zeros((2, 3))], [mx.nd.zeros((2,))], pad=1)
    assert str(batch) == "DataBatch: data shapes: [(2, 3)] label shapes: [(2,)]"
    with pytest.raises(TypeError, match="data must be a list of NDArrays"):
        mx.io.DataBatch(mx.nd.zeros((2,)))


def test_resize_iter_restarts_its_inner_iterator():
    r = mx.io.ResizeIter(mx.io.NDArrayIter(np.arange(5), batch_size=2), 5)
    # MXNet 1.9.1 gives the same batches
    assert [b.data[0].asnumpy().astype(int).tolist() for b in r] == [[0, 1], [2, 3], [4, 0], [0, 1], [2, 3]]
    r.reset()
    assert len(list(r)) == 5


def test_prefetching_iter_joins_and_renames():
    p = mx.io.PrefetchingIter([mx.io.NDArrayIter(np.arange(4), batch_size=2, data_name="x"),
                               mx.io.NDArrayIter(np.arange(4) * 2, np.arange(4), batch_size=2)],
                              rename_data=[{"x": "x1"}, {"data": "d2"}])
    assert [d.name for d in p.provide_data] == ["x1", "d2"]
    assert [d.name for d in p.provide_label] == ["softmax_label"]
    for _ in range(2):
        assert [[d.asnumpy().astype(int).tolist() for d in b.data] for b in p] == [[[0, 1], [0, 2]],
                                                                                  [[2, 3], [4, 6]]]
        p.reset()
    p.close()


def test_prefetching_iter_reports_mismatched_iterators():
    p = mx.io.PrefetchingIter([mx.io.NDArrayIter(np.arange(4), batch_size=2),
                               mx.io.NDArrayIter(np.arange(2), batch_size=2)])
    next(p)
    with pytest.raises(ValueError, match="different numbers of batches"):
        next(p)
    p.close()


def test_custom_dataiter_through_the_base_class():
    class Count(mx.io.DataIter):
        def __init__(self):
            super().__init__(batch_size=1)
            self.i = 0

        def iter_next(self):
            self.i += 1
            return self.i <= 2

        def getdata(self):
            return [mx.nd.array([self.i])]

        def getlabel(self):
            return []

        def getpad(self):
            return 0

    assert [b.data[0].asscalar() for b in Count()] == [1.0, 2.0]


def test_ndarrayiter_dtypes_as_mxnet():
    label = mx.nd.array([1, 2, 3, 4], dtype="int32")
    it = mx.io.NDArrayIter(mx.nd.ones((4, 2)), label, batch_size=2)
    assert it.provide_label[0].dtype == np.int32 and next(it).label[0].dtype == np.int32
    # MXNet 1.9.1 too: shuffling rebuilds the arrays with mx.nd.array, so as float32
    it = mx.io.NDArrayIter(mx.nd.ones((4, 2)), label, batch_size=2, shuffle=True)
    assert it.provide_label[0].dtype == np.float32 and next(it).label[0].dtype == np.float32
    assert mx.io.NDArrayIter(np.arange(4, dtype="int64")).provide_data[0].dtype == np.float32
