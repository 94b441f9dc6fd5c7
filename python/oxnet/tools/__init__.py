"""Command-line tools: ``python -m oxnet.tools.im2rec`` (image lists and
RecordIO files from folders of images, as MXNet's ``tools/im2rec.py``)."""
