"""A fork never leaves one of the engine's locks held in the child (oxnet-core's
``fork`` module, as MXNet's ``pthread_atfork`` handlers): a thread keeps
drawing random numbers (holding the global generator's lock, the GIL released)
while the test forks again and again, and every child must draw too and exit
within a bounded time. A hung child is killed and fails the test."""

import os
import signal
import threading
import time
import warnings

import pytest

import oxnet as mx

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

FORKS = 40
CHILD_LIMIT_S = 20


def _child():
    try:
        x = mx.nd.random.uniform(shape=(16,))
        mx.random.seed(3)
        y = mx.nd.random.normal(shape=(16,))
        ok = x.shape == (16,) and y.shape == (16,) and float(x.asnumpy().max()) < 1.0
        os._exit(0 if ok else 1)
    except BaseException:  # pylint: disable=broad-except
        os._exit(2)


def _wait_bounded(pid):
    """The child's wait status, or None after killing it when it ran too long."""
    deadline = time.monotonic() + CHILD_LIMIT_S
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return status
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.002)


def test_children_forked_while_a_thread_draws_random_numbers_never_hang():
    stop = threading.Event()

    def draw():
        while not stop.is_set():
            mx.nd.random.uniform(shape=(20000,)).wait_to_read()

    thread = threading.Thread(target=draw, daemon=True)
    thread.start()
    statuses = []
    try:
        time.sleep(0.05)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (Python 3.12+)
            for _ in range(FORKS):
                pid = os.fork()
                if pid == 0:
                    _child()
                statuses.append(_wait_bounded(pid))
                if statuses[-1] is None:
                    break
    finally:
        stop.set()
        thread.join(timeout=30)
    assert None not in statuses, f"a forked child hung (killed after {CHILD_LIMIT_S} s)"
    assert all(os.WIFEXITED(s) and os.WEXITSTATUS(s) == 0 for s in statuses), statuses
