"""DataLoader worker processes: started by fork (lambdas, local functions and
unpicklable datasets work, as in MXNet), each with its own random state, and
failing loudly: an exception, a dead worker or a hung one is an error within
seconds, never a hang, and no process is left behind.

Every test here is bounded: the in-process ones by an alarm (a hang fails
the test), the failure cases by running in a subprocess with a timeout."""

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import oxnet as mx
from oxnet import nd
from oxnet.gluon import data as gdata
from oxnet.gluon.data import dataloader as _dataloader
from oxnet.gluon.data.vision import transforms

needs_fork = pytest.mark.skipif(_dataloader.DEFAULT_START_METHOD != "fork",
                                reason="worker processes are forked only where fork exists")

TEST_LIMIT_S = 60


@pytest.fixture(autouse=True)
def _bounded():
    """Fails (instead of hanging) a test that runs longer than TEST_LIMIT_S."""
    def on_alarm(signum, frame):
        raise TimeoutError(f"test still running after {TEST_LIMIT_S} s: a DataLoader hung")
    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(TEST_LIMIT_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _as_np(batch):
    if isinstance(batch, (list, tuple)):
        return [_as_np(b) for b in batch]
    return batch.asnumpy() if isinstance(batch, nd.NDArray) else np.asarray(batch)


def _assert_same(a, b):
    assert type(a) is type(b)
    if isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same(x, y)
    else:
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


def _batches(loader):
    return [_as_np(b) for b in loader]


# ----- what workers accept -------------------------------------------------------------

@needs_fork
def test_lambdas_and_local_functions_reach_forked_workers():
    scale = nd.array([3.0])

    def local_transform(x, y):  # a closure over an NDArray: not picklable by reference
        return nd.broadcast_mul(x, scale), y + 1

    def local_batchify(samples):
        xs, ys = zip(*samples)
        return [nd.stack(*xs), nd.array(np.array(ys), dtype="int64"), float(len(samples))]

    X = np.arange(33, dtype=np.float32).reshape(11, 3)
    ds = gdata.ArrayDataset(nd.array(X), np.arange(11)).transform(local_transform)
    ds = ds.transform_first(lambda x: x - 1)
    for batchify in (local_batchify, lambda s: gdata.default_batchify_fn(s), None):
        reference = _batches(gdata.DataLoader(ds, batch_size=4, batchify_fn=batchify))
        loader = gdata.DataLoader(ds, batch_size=4, batchify_fn=batchify, num_workers=2)
        assert len(reference) == 3
        _assert_same(_batches(loader), reference)
        _assert_same(_batches(loader), reference)  # the same workers serve a second pass


@needs_fork
def test_the_reported_local_batchify_fn_case_returns():
    def f(samples):
        return nd.stack(*samples) + 1

    # as in MXNet, a batch_size is required: the reported call raises at once
    with pytest.raises(ValueError, match="batch_size"):
        gdata.DataLoader(nd.ones(5), batchify_fn=f, num_workers=1)
    loader = gdata.DataLoader(nd.ones(5), batch_size=2, batchify_fn=f, num_workers=1)
    assert [b.asnumpy().ravel().tolist() for b in loader] == [[2.0, 2.0], [2.0, 2.0], [2.0]]


@needs_fork
def test_forked_workers_decode_records_and_run_transform_blocks(tmp_path):
    rng = np.random.RandomState(0)
    rec, idx = str(tmp_path / "img.rec"), str(tmp_path / "img.idx")
    writer = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    for i in range(6):
        img = rng.randint(0, 256, size=(12, 10, 3)).astype(np.uint8)
        writer.write_idx(i, mx.recordio.pack_img(mx.recordio.IRHeader(0, float(i), i, 0), img, img_fmt=".png"))
    writer.close()
    # A big product first: the forking process' thread pool has run a job.
    nd.dot(nd.ones((384, 384)), nd.ones((384, 384))).wait_to_read()
    augment = transforms.Compose([transforms.ToTensor(), transforms.Normalize(0.5, 0.25)])
    ds = gdata.vision.ImageRecordDataset(rec).transform_first(augment)
    ds = ds.transform(lambda x, y: (nd.dot(x.reshape((3, -1)), nd.ones((120, 2))), y))
    reference = _batches(gdata.DataLoader(ds, batch_size=2))
    _assert_same(_batches(gdata.DataLoader(ds, batch_size=2, num_workers=2)), reference)


class _Draws(gdata.Dataset):
    """Each sample: the worker's pid and a draw of each random generator."""

    def __len__(self):
        return 8

    def __getitem__(self, idx):
        import random
        return np.array([os.getpid(), np.random.rand(), random.random(),
                         nd.random.uniform(shape=(1,)).asscalar()])


@needs_fork
def test_each_worker_draws_different_random_numbers():
    np.random.seed(5)
    mx.random.seed(5)
    loader = gdata.DataLoader(_Draws(), batch_size=1, num_workers=2, prefetch=8)
    rows = np.concatenate(_batches(loader))
    first = {}
    for row in rows:
        first.setdefault(row[0], row[1:])
    assert len(first) == 2, "both workers should have made batches"
    a, b = first.values()
    assert np.all(a != b), "numpy, Python and oxnet generators all differ between workers"
    # the parent's generators are neither used nor advanced by the workers
    np.random.seed(5)
    expected = np.random.rand()
    np.random.seed(5)
    gdata.DataLoader(_Draws(), batch_size=1, num_workers=1)
    assert np.random.rand() == expected


def test_thread_pool_takes_lambdas():
    ds = gdata.SimpleDataset(list(range(7))).transform(lambda v: nd.array([v * 2.0]))
    loader = gdata.DataLoader(ds, batch_size=3, num_workers=2, thread_pool=True,
                              batchify_fn=lambda s: nd.concat(*s, dim=0))
    assert [b.asnumpy().tolist() for b in loader] == [[0, 2, 4], [6, 8, 10], [12]]


class _Squares(gdata.Dataset):
    def __len__(self):
        return 5

    def __getitem__(self, idx):
        return np.float32(idx * idx)


def test_spawn_is_still_selectable():
    loader = gdata.DataLoader(_Squares(), batch_size=2, num_workers=1, start_method="spawn")
    assert [b.asnumpy().tolist() for b in loader] == [[0, 1], [4, 9], [16]]
    with pytest.raises(ValueError, match="start_method"):
        gdata.DataLoader(_Squares(), batch_size=2, num_workers=1, start_method="teleport")


# ----- failures ------------------------------------------------------------------------

# Run in a fresh interpreter with a timeout, so that a hang fails the test. Each
# case makes a loader whose dataset (or transform, or batchify_fn) fails on
# sample 3 while the flag file exists, reads a pass, records what was raised,
# then removes the flag and reads a pass again (the loader must still work), and
# counts this process' children (zombies included) once the loader is deleted.
_FAILURES = r"""
import ctypes, gc, json, os, signal, sys, tempfile, time
import numpy as np
import oxnet as mx
from oxnet import nd
from oxnet.gluon.data import DataLoader, SimpleDataset

FLAG = os.path.join(tempfile.mkdtemp(), "fail")

def children():
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me:
                found.append(fields[0])
    return found

def fail(how):
    if not os.path.exists(FLAG):
        return
    if how == "raise":
        raise KeyError("no sample 3 today")
    if how == "exit":
        os._exit(3)
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if how == "segfault":
        ctypes.string_at(0)
    if how == "hang":
        time.sleep(120)

def case(where, how, timeout):
    def sample(i):
        if where == "getitem" and i == 3:
            fail(how)
        return np.float32(i)
    def transform(x):
        if where == "transform" and x == 3:
            fail(how)
        return x * 2
    def batchify(samples):
        if where == "batchify" and 6 in [int(s) for s in samples]:  # sample 3, doubled
            fail(how)
        return nd.array(np.array(samples))
    class Samples:
        def __len__(self):
            return 8
        def __getitem__(self, i):
            return sample(i)
    ds = SimpleDataset(Samples()).transform(transform)
    open(FLAG, "w").close()
    loader = DataLoader(ds, batch_size=2, num_workers=2, batchify_fn=batchify, timeout=timeout)
    out = {}
    start = time.monotonic()
    try:
        out["batches"] = [b.asnumpy().tolist() for b in loader]
    except BaseException as e:
        out["seconds"] = time.monotonic() - start
        out["type"] = type(e).__name__
        out["mro"] = [c.__name__ for c in type(e).__mro__]
        out["message"] = str(e)
        out["notes"] = getattr(e, "__notes__", [])
        out["cause"] = str(e.__cause__) if e.__cause__ is not None else ""
    os.remove(FLAG)
    out["again"] = [b.asnumpy().tolist() for b in loader]
    del loader
    gc.collect()
    out["children_after"] = children()
    return out

cases = [(w, "raise", 120) for w in ("getitem", "transform", "batchify")]
cases += [("getitem", h, 120) for h in ("exit", "kill", "segfault")]
cases += [("transform", "kill", None), ("getitem", "hang", 1)]
for where, how, timeout in cases:
    print(json.dumps({"case": f"{where}-{how}-{timeout}", **case(where, how, timeout)}), flush=True)
"""


@pytest.fixture(scope="module")
def failures():
    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc")
    signal.alarm(0)  # the subprocess has its own limit
    try:
        proc = subprocess.run([sys.executable, "-c", _FAILURES], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"a failing DataLoader hung; output so far:\n{e.stdout}\n{e.stderr}")
    assert proc.returncode == 0, proc.stderr
    return {r["case"]: r for r in map(json.loads, proc.stdout.splitlines())}


DOUBLED = [[0.0, 2.0], [4.0, 6.0], [8.0, 10.0], [12.0, 14.0]]


@needs_fork
@pytest.mark.parametrize("where", ["getitem", "transform", "batchify"])
def test_an_exception_in_a_worker_reaches_the_caller(failures, where):
    r = failures[f"{where}-raise-120"]
    assert r["type"] == "KeyError" and "no sample 3 today" in r["message"]
    assert any("DataLoader worker" in n and "batch 1" in n for n in r["notes"]), r["notes"]
    assert "DataLoader worker" in r["cause"] and "in fail" in r["cause"] and "KeyError" in r["cause"]
    assert r["again"] == DOUBLED
    assert r["children_after"] == []


@needs_fork
@pytest.mark.parametrize("case, cause", [
    ("getitem-exit-120", "exited with code 3"),
    ("getitem-kill-120", "killed by SIGKILL"),
    ("getitem-segfault-120", "killed by SIGSEGV"),
    ("transform-kill-None", "killed by SIGKILL"),
])
def test_a_dead_worker_is_an_error_not_a_hang(failures, case, cause):
    r = failures[case]
    assert r["type"] == "MXNetError", r
    assert "DataLoader worker" in r["message"] and cause in r["message"], r["message"]
    assert "batch 1 (samples [2, 3])" in r["message"]
    # reported when it happens, not when the 120 s timeout runs out
    assert r["seconds"] < 30
    assert r["again"] == DOUBLED  # new workers serve the next pass
    assert r["children_after"] == []


@needs_fork
def test_a_hung_worker_times_out(failures):
    r = failures["getitem-hang-1"]
    assert r["type"] == "DataLoaderTimeoutError"
    assert "MXNetError" in r["mro"] and "TimeoutError" in r["mro"]
    assert "DataLoader worker" in r["message"] and "timeout=1" in r["message"]
    assert r["again"] == DOUBLED
    assert r["children_after"] == []


@needs_fork
def test_workers_are_joined_when_the_loader_goes():
    loader = gdata.DataLoader(_Squares(), batch_size=2, num_workers=2)
    procs = list(loader._workers._procs)
    assert all(p.is_alive() for p in procs)
    it = iter(loader)
    next(it)
    del it  # a pass left half way
    assert [b.asnumpy().tolist() for b in loader] == [[0, 1], [4, 9], [16]]
    del loader
    import gc
    gc.collect()
    assert all(p.exitcode is not None for p in procs)
