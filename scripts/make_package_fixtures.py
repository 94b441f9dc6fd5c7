#!/usr/bin/env python3
"""Lists the modules of MXNet 1.9.1's Python package, for oxnet's test that
each of them imports (tests/python/test_package_surface.py).

Writes tests/fixtures/package/mxnet_modules.txt: one dotted name per line,
without the leading ``mxnet.``. Left out: private modules (a part starting
with ``_``), the operator modules the wheel's build generated (``gen_*``,
whose functions ``mx.nd``/``mx.sym`` hold), packaging scripts (``setup``,
which run setuptools when imported) and files in folders that are not
packages (the wheel's ``tools`` scripts).

Usage (from the repository root; needs mxnet==1.9.1):

    .venv-mxnet/bin/python scripts/make_package_fixtures.py
"""

import os
import pathlib

import mxnet


def main():
    root = pathlib.Path(mxnet.__file__).parent
    names = set()
    for path in root.rglob("*.py"):
        rel = path.relative_to(root).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not parts or any(p.startswith("_") for p in parts) or parts[-1].startswith("gen_") \
                or parts[-1] == "setup":
            continue
        if not all((root.joinpath(*rel.parts[:i]) / "__init__.py").exists() for i in range(1, len(rel.parts))):
            continue
        names.add(".".join(parts))
    out = pathlib.Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "package" / "mxnet_modules.txt"
    os.makedirs(out.parent, exist_ok=True)
    out.write_text("".join(f"{n}\n" for n in sorted(names)))
    print(f"{len(names)} modules -> {out}")


if __name__ == "__main__":
    main()
