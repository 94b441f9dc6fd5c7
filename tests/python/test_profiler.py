"""mx.profiler: what is recorded (operators, graph nodes, Python custom
operators and the calls they make, backward kernels, memory, user tasks,
frames, events, counters, markers), the Chrome trace file and the aggregate
statistics, checked by counting the calls each test makes."""

import json

import numpy as np
import pytest

import oxnet as mx
from oxnet import profiler


@pytest.fixture
def prof(tmp_path):
    """A fresh profiler writing to a temporary file; yields the file's path."""
    path = tmp_path / "trace.json"
    profiler.set_state("stop")
    profiler.set_config(profile_all=True, aggregate_stats=True, filename=str(path))
    profiler.clear()
    yield path
    profiler.set_state("stop")
    profiler.clear()


def stats():
    return json.loads(profiler.dumps(format="json"))


def trace(path):
    profiler.dump(False)
    with open(path) as f:
        return json.load(f)["traceEvents"]


class _Sigmoid(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        self.assign(out_data[0], req[0], mx.nd.array(1 / (1 + np.exp(-x))))
        mx.nd.zeros((3, 3))  # an operator called inside: MyProfSigmoid::_zeros

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        y = out_data[0].asnumpy()
        self.assign(in_grad[0], req[0], mx.nd.array(out_grad[0].asnumpy() * y * (1 - y)))


@mx.operator.register("MyProfSigmoid")
class _SigmoidProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return _Sigmoid()


def test_imperative_calls_are_counted_while_running_only(prof):
    x = mx.nd.ones((4, 4))
    mx.nd.sqrt(x)  # stopped: not counted
    profiler.set_state("run")
    mx.nd.sqrt(x)
    y = x + 1
    y = y + 1
    profiler.pause()
    mx.nd.sqrt(x)  # paused: not counted
    profiler.resume()
    profiler.set_state("stop")
    ops = stats()["Time"]["operator"]
    assert ops["sqrt"]["Count"] == 1
    assert ops["_plus_scalar"]["Count"] == 2
    entry = ops["_plus_scalar"]
    assert entry["Min"] <= entry["Avg"] <= entry["Max"]
    assert entry["Total"] == pytest.approx(2 * entry["Avg"], abs=2e-4)


def test_python_custom_op_time_and_inner_calls(prof):
    x = mx.nd.array([0.0, 1.0, 2.0])
    x.attach_grad()
    profiler.set_state("run")
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type="MyProfSigmoid")
    y.backward()
    profiler.set_state("stop")
    custom = stats()["Time"]["Custom Operator"]
    assert custom["MyProfSigmoid::pure_python"]["Count"] == 1
    assert custom["_backward_MyProfSigmoid::pure_python"]["Count"] == 1
    assert custom["MyProfSigmoid::_zeros"]["Count"] == 1
    assert "MyProfSigmoid::_zeros" not in stats()["Time"].get("operator", {})
    # and the gradient is right
    s = 1 / (1 + np.exp(-x.asnumpy()))
    np.testing.assert_allclose(x.grad.asnumpy(), s * (1 - s), rtol=1e-5)


def test_backward_kernels_are_named_backward(prof):
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    profiler.set_state("run")
    with mx.autograd.record():
        z = mx.nd.Custom(x, op_type="MyProfSigmoid").sum()
    z.backward()
    profiler.set_state("stop")
    ops = stats()["Time"]["operator"]
    assert ops["Custom"]["Count"] == 1 and ops["_backward_Custom"]["Count"] == 1
    assert ops["sum"]["Count"] == 1 and ops["_backward_sum"]["Count"] == 1


def test_graph_nodes_follow_profile_symbolic(prof, tmp_path):
    a = mx.sym.Variable("a")
    net = mx.sym.exp(a, name="my_exp") * 2
    exe = net.bind(mx.cpu(), {"a": mx.nd.ones((2, 2))})
    profiler.set_config(profile_symbolic=True, profile_imperative=False, filename=str(prof))
    profiler.set_state("run")
    for _ in range(3):
        exe.forward()
    mx.nd.sqrt(mx.nd.ones((2,)))  # imperative: off
    profiler.set_state("stop")
    ops = stats()["Time"]["operator"]
    assert ops["exp"]["Count"] == 3 and ops["_mul_scalar"]["Count"] == 3
    assert "sqrt" not in ops
    nodes = {e.get("args", {}).get("node") for e in trace(prof) if e.get("name") == "exp"}
    assert nodes == {"my_exp"}


def test_hybridized_block_nodes_are_recorded(prof):
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Dense(3, in_units=4), mx.gluon.nn.Dense(2, in_units=3))
    net.initialize()
    net.hybridize()
    x = mx.nd.ones((5, 4))
    net(x)  # builds the graph
    profiler.set_state("run")
    net(x)
    net(x)
    profiler.set_state("stop")
    assert stats()["Time"]["operator"]["FullyConnected"]["Count"] == 4


def test_trace_file_is_chrome_trace(prof):
    profiler.set_state("run")
    x = mx.nd.ones((8,))
    for _ in range(3):
        mx.nd.relu(x)
    domain = profiler.Domain("ProfTest")
    task = profiler.Task(domain, "work")
    task.start()
    mx.nd.relu(x)
    task.stop()
    with profiler.Frame(domain, "step"):
        pass
    with profiler.Event("ev"):
        pass
    counter = profiler.Counter(domain, "ctr", 5)
    counter += 2
    counter -= 4
    profiler.Marker(domain, "here").mark("thread")
    with profiler.scope("outer:"):
        with profiler.scope("inner:", append_mode=True):
            mx.nd.relu(x)
    profiler.set_state("stop")
    events = trace(prof)
    relu = [e for e in events if e.get("name") == "relu"]
    assert len(relu) == 5
    assert all(e["ph"] == "X" and e["cat"] == "operator" and e["dur"] >= 0 for e in relu)
    tids = {e["tid"] for e in events if e.get("ph") == "M" and e["name"] == "thread_name"}
    assert {e["tid"] for e in relu} <= tids
    (work,) = [e for e in events if e.get("name") == "work"]
    assert work["cat"] == "ProfTest" and work["ph"] == "X"
    # the relu inside the task lies within it
    inside = [e for e in relu if work["ts"] <= e["ts"] and e["ts"] + e["dur"] <= work["ts"] + work["dur"]]
    assert len(inside) == 1
    assert [e["cat"] for e in events if e.get("name") == "step"] == ["ProfTest,frame"]
    assert [e["cat"] for e in events if e.get("name") == "ev"] == ["event"]
    assert [e["args"]["ctr"] for e in events if e.get("name") == "ctr"] == [5, 7, 3]
    (mark,) = [e for e in events if e.get("name") == "here"]
    assert mark["ph"] == "i" and mark["s"] == "t" and mark["cat"] == "ProfTest,instant_marker"
    assert {e["name"] for e in events if e.get("cat") == "scope"} == {"outer:", "outer:inner:"}
    ctr = stats()["Time"]["ProfTest"]["ctr"]
    assert (ctr["Count"], ctr["Min"], ctr["Max"], ctr["Total"]) == (3, 3, 7, 3)


def test_memory_in_use_is_a_counter(prof):
    profiler.set_state("run")
    big = mx.nd.zeros((1000, 1000))  # 4 MB
    del big
    profiler.set_state("stop")
    mem = stats()["Memory"]["Device Storage"]["Memory: cpu/0"]
    assert mem["Max"] - mem["Min"] >= 4000 - 1e-6  # kB
    assert "Total" not in mem


def test_continuous_dumps_grow_and_finished_dump_drops(prof):
    profiler.set_state("run")
    sizes = []
    for _ in range(3):
        mx.nd.relu(mx.nd.ones((2,)))
        profiler.dump(False)
        sizes.append(prof.stat().st_size)
        json.loads(prof.read_text())  # every dump is a whole JSON file
    assert sizes[0] < sizes[1] < sizes[2]
    profiler.set_state("stop")
    profiler.dump(True)
    profiler.dump(True)
    assert not [e for e in json.loads(prof.read_text())["traceEvents"] if e.get("name") == "relu"]


def test_dumps_sorting_and_reset(prof):
    profiler.set_state("run")
    x = mx.nd.ones((2,))
    for _ in range(3):
        mx.nd.relu(x)
    mx.nd.sqrt(x)
    profiler.set_state("stop")
    text = profiler.dumps(format="json", sort_by="count", ascending=True)
    ops = json.loads(text)["Time"]["operator"]
    counts = [v["Count"] for v in ops.values()]
    assert counts == sorted(counts)
    table = profiler.dumps(sort_by="count")
    assert "Profile Statistics:" in table and "Time (ms)" in table
    relu_line = next(line for line in table.splitlines() if line.startswith("relu "))
    assert relu_line.split()[1] == "3"
    profiler.dumps(reset=True)
    assert json.loads(profiler.dumps(format="json"))["Time"] == {}


def test_bad_arguments_are_errors(prof):
    with pytest.raises(mx.MXNetError, match="unknown argument.*bogus"):
        profiler.set_config(bogus=True)
    with pytest.raises(mx.MXNetError, match="profile_memory.*boolean"):
        profiler.set_config(profile_memory="maybe")
    with pytest.raises(mx.MXNetError, match="format"):
        profiler.dumps(format="xml")
    with pytest.raises(mx.MXNetError, match="sort_by"):
        profiler.dumps(sort_by="name")
    with pytest.raises(mx.MXNetError, match="state"):
        profiler.set_state("go")
    with pytest.raises(mx.MXNetError, match="server"):
        profiler.set_state("run", profile_process="server")
    with pytest.raises(mx.MXNetError, match="scope"):
        profiler.Marker(profiler.Domain("d"), "m").mark("galaxy")
    with pytest.raises(mx.MXNetError, match="stopped without being started"):
        profiler.Task(profiler.Domain("d"), "t").stop()
    profiler.set_config(filename=str(prof.parent / "missing-dir" / "t.json"))
    profiler.set_state("run")
    with pytest.raises(mx.MXNetError, match="cannot write the trace file"):
        profiler.dump()


def test_runtime_feature_says_profiler():
    assert mx.runtime.Features().is_enabled("PROFILER")


def test_autostart_from_the_environment(tmp_path):
    import os
    import subprocess
    import sys

    env = dict(os.environ, MXNET_PROFILER_AUTOSTART="1")
    subprocess.run([sys.executable, "-c", "import oxnet as mx; mx.nd.relu(mx.nd.ones((3,)))"], cwd=tmp_path,
                   env=env, check=True, timeout=120)
    events = json.loads((tmp_path / "profile.json").read_text())["traceEvents"]
    assert [e["name"] for e in events if e.get("name") == "relu"] == ["relu"]
