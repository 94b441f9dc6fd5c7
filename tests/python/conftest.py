"""Shared set-up: the examples folder is importable, so tests run the seed examples themselves."""

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "python"))
