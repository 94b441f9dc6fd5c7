#!/usr/bin/env python3
"""Fetches MXNet 1.9.1's extension-library SDK: lib_api.h and lib_api.cc.

Libraries written for MXNet 1.7-2.0 include "mxnet/lib_api.h" and compile
MXNet's lib_api.cc in. oxnet's tests build such a library to check that oxnet
loads it unchanged; they need those two files, which only MXNet's wheel ships.
This script downloads the `mxnet==1.9.1` wheel from PyPI with pip, extracts
only the two files into

    target/mxnet-sdk/include/mxnet/lib_api.h
    target/mxnet-sdk/src/lib_api.cc

and deletes the wheel (about 50 MB). It does nothing when both files exist.
On any failure (no network, no pip) it prints one warning and exits 0: the
tests that need the files then skip with a reason.

Usage: python3 scripts/fetch_mxnet_sdk.py [--dest DIR]
"""

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import zipfile

VERSION = "1.9.1"
# the two files and where they lie inside the wheel
MEMBERS = {
    "mxnet/include/mxnet/lib_api.h": pathlib.Path("include/mxnet/lib_api.h"),
    "mxnet/src/lib_api.cc": pathlib.Path("src/lib_api.cc"),
}
ROOT = pathlib.Path(__file__).resolve().parent.parent


def warn(message):
    print(f"warning: fetch_mxnet_sdk: {message}; the tests that build an MXNet 1.9.1 "
          f"library will be skipped", file=sys.stderr)


def download(tmp):
    """Downloads the wheel into `tmp` and returns its path."""
    cmd = [
        sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
        "--no-deps", "--only-binary=:all:", "--platform", "manylinux2014_x86_64",
        "--python-version", "3.11", f"mxnet=={VERSION}", "-d", str(tmp),
    ]
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        last = (result.stdout.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"pip download mxnet=={VERSION} failed: {last}")
    wheels = sorted(pathlib.Path(tmp).glob(f"mxnet-{VERSION}-*.whl"))
    if not wheels:
        raise RuntimeError(f"pip download left no mxnet-{VERSION} wheel")
    return wheels[0]


def extract(wheel, dest):
    """Writes the two members of `wheel` under `dest` (each through a temporary file)."""
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        missing = [m for m in MEMBERS if m not in names]
        if missing:
            raise RuntimeError(f"{wheel.name} holds no {', '.join(missing)}")
        for member, rel in MEMBERS.items():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            part = target.with_name(target.name + ".part")
            with z.open(member) as src, open(part, "wb") as out:
                shutil.copyfileobj(src, out)
            os.replace(part, target)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=pathlib.Path, default=ROOT / "target" / "mxnet-sdk",
                        help="where to put include/ and src/ (default: target/mxnet-sdk)")
    dest = parser.parse_args().dest
    if all((dest / rel).is_file() for rel in MEMBERS.values()):
        return 0
    try:
        dest.mkdir(parents=True, exist_ok=True)
        # the wheel goes next to the destination (same disk), and is deleted with the folder
        with tempfile.TemporaryDirectory(prefix="mxnet-wheel.", dir=dest) as tmp:
            extract(download(tmp), dest)
    except Exception as e:  # any failure: warn, the tests skip
        warn(str(e) or type(e).__name__)
        try:
            dest.rmdir()  # only if this run left it empty
        except OSError:
            pass
        return 0
    print(f"fetch_mxnet_sdk: MXNet {VERSION}'s lib_api.h and lib_api.cc are in {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
