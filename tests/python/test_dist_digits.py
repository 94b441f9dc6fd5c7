"""The data-parallel digits example on 2 ranks reaches the accuracy of
one process (examples/python/dist_digits.py)."""

import re

import pytest

from mpi_ranks import ROOT, run_ranks

RUN = """
    import runpy, sys
    sys.argv = ["dist_digits.py"] + sys.argv[1:]
    runpy.run_path(r"{path}", run_name="__main__")
"""


@pytest.mark.parametrize("api", ["kvstore", "horovod"])
def test_two_ranks_train_the_digits_cnn(tmp_path, api):
    code = RUN.format(path=ROOT / "examples" / "python" / "dist_digits.py")
    _, out = run_ranks(2, code, tmp_path, args=("--epochs", "4", "--api", api))
    found = re.search(r"held-out accuracy: ([0-9.]+)% on 360 images, 2 ranks", out)
    assert found, out
    # one process reaches 97.5% after 4 epochs (examples/python/gluon_digits.py --epochs 4); 2 ranks 97.8%
    assert float(found.group(1)) >= 93.0, out
