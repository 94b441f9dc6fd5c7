#!/usr/bin/env python3
"""Run MXNet 1.9.1's own unit tests against oxnet and compare with MXNet.

The test files live outside this repository (`../shared/mxnet-tests` beside
the checkout, or the folder `--tests` / `$OXNET_MXNET_TESTS` names): MXNet's
`tests/python/unittest` at tag 1.9.1, a `conftest.py` that resolves
`import mxnet` to `oxnet` when `ENGINE=oxnet`, and `baseline.tsv`, every
test's outcome on MXNet 1.9.1 itself. They are run from there, never copied.

For each file this prints how many of the tests MXNet passes also pass on
oxnet, and which of them fail. With `--ratchet FILE` (CI passes the list
kept in `tests/mxnet_fidelity/passing.txt`), it exits 1 when a test on that
list fails now; `--record` rewrites the list from this run. A file below
the goal shows, beside it, why its failing tests fail (one line per test in
`tests/mxnet_fidelity/reasons.tsv`; a failure without one is counted as not
explained).

Run it with a Python that has oxnet installed and what the test files
import: `scripts/test.sh` makes `.venv-mxtests` for this (the packages of
requirements-mxnet-tests.txt: numpy<1.24 and scipy<1.11, as MXNet's
outcomes were recorded with, pytest, pytest-timeout, nose; oxnet put in
with `maturin develop`):

    .venv-mxtests/bin/python scripts/mxnet_tests.py
    .venv-mxtests/bin/python scripts/mxnet_tests.py --files test_autograd --failures
"""
import argparse
import concurrent.futures
import os
import pathlib
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

ROOT = pathlib.Path(__file__).resolve().parent.parent
RATCHET = ROOT / "tests" / "mxnet_fidelity" / "passing.txt"
# Why a test MXNet passes still fails on oxnet: "file::test<TAB>reason" per line.
REASONS = ROOT / "tests" / "mxnet_fidelity" / "reasons.tsv"

# Files whose goal belongs to another issue: their figures are shown, but
# they are measured there (the operator set; the profiler, with the
# training workflows).
OTHER_ISSUE = {"test_operator": "operator-set issue", "test_profiler": "workflows issue"}

GOAL = 0.90
FILE_LIMIT_S = 1200  # one file's whole run; a hung file is stopped and counted as failed


def default_tests_dir():
    env = os.environ.get("OXNET_MXNET_TESTS")
    return pathlib.Path(env) if env else ROOT.parent / "shared" / "mxnet-tests"


def read_baseline(tests_dir):
    """{file: {test_id: outcome}} from baseline.tsv (MXNet 1.9.1's outcomes)."""
    out = {}
    lines = (tests_dir / "baseline.tsv").read_text().splitlines()
    for line in lines[1:]:
        if not line.strip():
            continue
        file, test, outcome = line.split("\t")
        out.setdefault(file, {})[test] = outcome
    return out


def read_reasons():
    """{test_id: why it still fails on oxnet} from REASONS."""
    if not REASONS.exists():
        return {}
    out = {}
    for line in REASONS.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            test, why = line.split("\t", 1)
            out[test.strip()] = why.strip()
    return out


def run_file(python, tests_dir, file, out_dir):
    """Runs one test file under pytest; returns ({test_id: (outcome, message)}, note)."""
    xml = out_dir / f"{file}.xml"
    env = dict(os.environ, ENGINE="oxnet", MXNET_TEST_COUNT="1", OMP_NUM_THREADS="2", PYTHONDONTWRITEBYTECODE="1")
    # Fixed seeds (MXNet's tests draw a new one per run otherwise), so that
    # the ratchet does not flicker; the caller's environment may set others.
    env.setdefault("MXNET_MODULE_SEED", "1234")
    env.setdefault("MXNET_TEST_SEED", "1234")
    cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--timeout=120",
           "--junitxml", str(xml), f"{file}.py"]
    note = ""
    try:
        proc = subprocess.run(cmd, cwd=tests_dir, env=env, capture_output=True, text=True, timeout=FILE_LIMIT_S)
        if proc.returncode not in (0, 1) and not xml.exists():
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
            note = f"pytest exited {proc.returncode}: " + " | ".join(tail)
    except subprocess.TimeoutExpired:
        note = f"stopped after {FILE_LIMIT_S} s"
    results = {}
    if xml.exists():
        for case in ET.parse(xml).getroot().iter("testcase"):
            test_id = f"{case.get('classname', '').split('.')[-1]}::{case.get('name')}"
            outcome, message = "passed", ""
            for tag in ("failure", "error", "skipped"):
                el = case.find(tag)
                if el is not None:
                    outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
                    message = (el.get("message") or el.text or "").strip().splitlines()
                    message = message[0] if message else ""
                    break
            # a setup error after a pass is reported as a second entry: keep the worst
            if results.get(test_id, ("passed",))[0] == "passed":
                results[test_id] = (outcome, message)
    return results, note


def check_tools(python):
    missing = subprocess.run(
        [python, "-c", "import importlib.util as u, sys; "
         "sys.stdout.write(' '.join(m for m in ('pytest', 'pytest_timeout', 'nose', 'scipy', 'oxnet') "
         "if u.find_spec(m) is None))"],
        capture_output=True, text=True).stdout.split()
    if missing:
        sys.exit(f"{python} lacks {', '.join(missing)}: install requirements-mxnet-tests.txt and the oxnet "
                 "package (bash scripts/test.sh makes .venv-mxtests with both)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tests", type=pathlib.Path, default=default_tests_dir(), help="the mxnet-tests folder")
    ap.add_argument("--python", default=sys.executable, help="the Python with oxnet installed")
    ap.add_argument("--files", nargs="*", help="only these files (test_autograd ...)")
    ap.add_argument("--jobs", type=int, default=2, help="files run at once")
    ap.add_argument("--failures", action="store_true", help="list every failing test with its message")
    ap.add_argument("--ratchet", type=pathlib.Path, help="fail when a test listed in this file fails")
    ap.add_argument("--record", action="store_true", help=f"write the passing tests to {RATCHET.relative_to(ROOT)}")
    args = ap.parse_args()

    if not (args.tests / "baseline.tsv").exists():
        print(f"warning: no MXNet test suite at {args.tests} (set --tests or OXNET_MXNET_TESTS); "
              "the MXNet fidelity check is skipped", file=sys.stderr)
        return 0
    check_tools(args.python)
    baseline = read_baseline(args.tests)
    files = args.files or sorted(baseline)
    unknown = [f for f in files if f not in baseline]
    if unknown:
        sys.exit(f"not in baseline.tsv: {', '.join(unknown)}")

    # Some tests write files (checkpoints, exported graphs) into the folder
    # they run from; the run removes what it added.
    before = {p.name for p in args.tests.iterdir()}
    try:
        with tempfile.TemporaryDirectory() as tmp, concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            runs = dict(zip(files, pool.map(lambda f: run_file(args.python, args.tests, f, pathlib.Path(tmp)), files)))
    finally:
        for p in args.tests.iterdir():
            if p.name not in before and p.is_file():
                p.unlink()

    reasons = read_reasons()
    passing = set()
    rows = []
    for file in files:
        results, note = runs[file]
        wanted = sorted(t for t, o in baseline[file].items() if o == "passed")
        ok = [t for t in wanted if results.get(t, ("missing",))[0] == "passed"]
        passing.update(ok)
        share = len(ok) / len(wanted) if wanted else 1.0
        failing = [t for t in wanted if t not in ok]
        if file in OTHER_ISSUE:
            status = f"({OTHER_ISSUE[file]})"
        elif share >= GOAL:
            status = "ok"
        else:
            why = sorted({reasons[t] for t in failing if t in reasons})
            unexplained = sum(t not in reasons for t in failing)
            status = "below 90%: " + "; ".join(why + ([f"{unexplained} not explained"] if unexplained else []))
        rows.append((file, len(wanted), len(ok), share, status, note))
        if args.failures:
            for t in failing:
                outcome, message = results.get(t, ("not run", ""))
                why = f" [{reasons[t]}]" if t in reasons else ""
                print(f"  {outcome:8} {t}:{why} {message[:160]}")

    width = max(len(r[0]) for r in rows)
    print(f"{'file':{width}}  MXNet passes  oxnet passes  share  goal 90%")
    for file, wanted, ok, share, status, note in rows:
        print(f"{file:{width}}  {wanted:12}  {ok:12}  {share:5.0%}  {status}{'  ' + note if note else ''}")
    in_scope = [r for r in rows if r[0] not in OTHER_ISSUE]
    total_w, total_ok = sum(r[1] for r in in_scope), sum(r[2] for r in in_scope)
    print(f"{'in scope':{width}}  {total_w:12}  {total_ok:12}  {total_ok / max(total_w, 1):5.0%}")

    if args.record:
        kept = set()
        if RATCHET.exists():  # tests of files not run this time stay listed
            kept = {t for t in RATCHET.read_text().split() if t.split("::")[0] not in files}
        RATCHET.parent.mkdir(parents=True, exist_ok=True)
        RATCHET.write_text("".join(f"{t}\n" for t in sorted(kept | passing)))
        print(f"recorded {len(kept | passing)} passing tests in {RATCHET.relative_to(ROOT)}")
    if args.ratchet:
        listed = [t for t in args.ratchet.read_text().split() if t.split("::")[0] in files]
        regressed = [t for t in listed if t not in passing]
        if regressed:
            print(f"\nFAILED: {len(regressed)} test(s) that passed at the last recorded run fail now:")
            for t in regressed:
                file = t.split("::")[0]
                outcome, message = runs[file][0].get(t, ("not run", ""))
                print(f"  {t}: {outcome} {message[:200]}")
            return 1
        print(f"ratchet: all {len(listed)} recorded tests still pass")
    return 0


if __name__ == "__main__":
    sys.exit(main())
