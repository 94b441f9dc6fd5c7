"""The README's Python examples run as written."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_readme_python_blocks_run(tmp_path, monkeypatch):
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, "the README has Python examples"
    monkeypatch.chdir(tmp_path)  # files the examples write land here
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})  # pylint: disable=exec-used
