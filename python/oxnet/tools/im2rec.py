"""``python -m oxnet.tools.im2rec``: MXNet's ``tools/im2rec.py`` — image
lists (``.lst``) from a folder of images, and RecordIO files (``.rec``
with ``.idx``) from image lists, with the same arguments and outputs.

::

    python -m oxnet.tools.im2rec --list --recursive data/train images/     # data/train.lst
    python -m oxnet.tools.im2rec --resize 256 --quality 90 data/train images/   # data/train.rec, .idx

A list line is ``index<TAB>label(s)<TAB>path``; with ``--recursive`` each
sub-folder is a class (labels 0, 1, ... in sorted order, printed). Records
are packed by ``mx.recordio.pack_img`` (or the file's bytes unchanged with
``--pass-through``) under the list's index, decoded, cropped, resized and
encoded on ``--num-thread`` threads (the work runs in Rust, outside the
GIL). An image that cannot be read or decoded is reported and skipped; the
others are written.
"""

import argparse
import os
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor

if __package__:
    from .. import _oxnet, recordio
    from ..ndarray import array
else:  # run as a file (``python path/to/im2rec.py``), as MXNet's tool is run
    from oxnet import _oxnet, recordio
    from oxnet.ndarray import array


def list_image(root, recursive, exts):
    """(index, relative path, label) of every image under ``root``, in
    sorted order; with ``recursive`` each folder is a class."""
    index = 0
    if recursive:
        classes = {}
        for path, dirs, files in os.walk(root, followlinks=True):
            dirs.sort()
            for fname in sorted(files):
                fpath = os.path.join(path, fname)
                if os.path.isfile(fpath) and os.path.splitext(fname)[1].lower() in exts:
                    label = classes.setdefault(path, len(classes))
                    yield index, os.path.relpath(fpath, root), label
                    index += 1
        for path, label in sorted(classes.items(), key=lambda kv: kv[1]):
            print(os.path.relpath(path, root), label)
        return
    for fname in sorted(os.listdir(root)):
        fpath = os.path.join(root, fname)
        if os.path.isfile(fpath) and os.path.splitext(fname)[1].lower() in exts:
            yield index, os.path.relpath(fpath, root), 0
            index += 1


def write_list(path_out, items):
    """Writes ``(index, path, label, ...)`` items as list lines."""
    with open(path_out, "w") as f:
        for item in items:
            labels = "".join("%f\t" % label for label in item[2:])
            f.write("%d\t%s%s\n" % (item[0], labels, item[1]))


def make_list(args):
    """Writes the list file(s) of ``args.root``: shuffled (seed 100) unless
    ``--no-shuffle``, in ``--chunks`` chunks, split by the train/test ratios."""
    items = list(list_image(args.root, args.recursive, args.exts))
    if args.shuffle:
        random.seed(100)
        random.shuffle(items)
    per_chunk = (len(items) + args.chunks - 1) // args.chunks
    for c in range(args.chunks):
        chunk = items[c * per_chunk:(c + 1) * per_chunk]
        suffix = "_%d" % c if args.chunks > 1 else ""
        n_train, n_test = int(per_chunk * args.train_ratio), int(per_chunk * args.test_ratio)
        if args.train_ratio == 1.0:
            write_list(args.prefix + suffix + ".lst", chunk)
            continue
        if args.test_ratio:
            write_list(args.prefix + suffix + "_test.lst", chunk[:n_test])
        if args.train_ratio + args.test_ratio < 1.0:
            write_list(args.prefix + suffix + "_val.lst", chunk[n_test + n_train:])
        write_list(args.prefix + suffix + "_train.lst", chunk[n_test:n_test + n_train])


def read_list(path_in):
    """The items ``[index, path, label, ...]`` of a list file; malformed
    lines are reported and skipped."""
    with open(path_in) as f:
        for line in f:
            fields = [x.strip() for x in line.strip().split("\t")]
            if len(fields) < 3:
                print("lst should have at least has three parts, but only has %s parts for %s"
                      % (len(fields), fields))
                continue
            try:
                yield [int(fields[0]), fields[-1]] + [float(x) for x in fields[1:-1]]
            except ValueError as e:
                print("Parsing lst met error for %s, detail: %s" % (fields, e))


def encode(args, item):
    """The record of one list item, or None (reported) if its image fails."""
    path = os.path.join(args.root, item[1])
    label = item[2:] if len(item) > 3 and args.pack_label else item[2]
    header = recordio.IRHeader(0, label, item[0], 0)
    try:
        with open(path, "rb") as f:
            data = f.read()
        if args.pass_through:
            return recordio.pack(header, data)
        img = _oxnet.image_decode(data, args.color, True)  # OpenCV's BGR, as MXNet's tool reads
        h, w = img.shape[:2]
        if args.center_crop:
            side = min(h, w)
            top, left = (h - side) // 2, (w - side) // 2
            img = img[top:top + side, left:left + side]
            h, w = side, side
        if args.resize:
            new_h, new_w = (h * args.resize // w, args.resize) if h > w else (args.resize, w * args.resize // h)
            img = _oxnet.image_resize(array(img.asnumpy(), dtype="uint8"), new_h, new_w, 1)
        return recordio.pack(header, _oxnet.image_encode(array(img.asnumpy(), dtype="uint8"), args.encoding,
                                                         args.quality, True))
    except Exception as e:  # pylint: disable=broad-except
        print("pack_img error on file: %s" % path, e)
        return None


def make_record(args, list_file):
    """Writes the .rec and .idx of one list file (next to it)."""
    base = os.path.splitext(list_file)[0]
    items = list(read_list(list_file))
    out = recordio.MXIndexedRecordIO(base + ".idx", base + ".rec", "w")
    start, written = time.time(), 0
    with ThreadPoolExecutor(max_workers=max(1, args.num_thread)) as pool:
        for count, (item, record) in enumerate(zip(items, pool.map(lambda it: encode(args, it), items))):
            if record is not None:
                out.write_idx(item[0], record)
                written += 1
            if count % 1000 == 0 and count:
                print("time:", time.time() - start, " count:", count)
    out.close()
    print(f"{base}.rec: {written} of {len(items)} images")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Create an image list or make a record database by reading from an image list")
    parser.add_argument("prefix", help="prefix of input/output lst and rec files.")
    parser.add_argument("root", help="path to folder containing images.")
    lists = parser.add_argument_group("Options for creating image lists")
    lists.add_argument("--list", action="store_true", help="make the image list (.lst) instead of the database")
    lists.add_argument("--exts", nargs="+", default=[".jpeg", ".jpg", ".png"], help="list of acceptable image extensions.")
    lists.add_argument("--chunks", type=int, default=1, help="number of chunks.")
    lists.add_argument("--train-ratio", type=float, default=1.0, help="Ratio of images to use for training.")
    lists.add_argument("--test-ratio", type=float, default=0, help="Ratio of images to use for testing.")
    lists.add_argument("--recursive", action="store_true", help="each sub-folder is a class")
    lists.add_argument("--no-shuffle", dest="shuffle", action="store_false", help="keep the listing order")
    db = parser.add_argument_group("Options for creating database")
    db.add_argument("--pass-through", action="store_true", help="store the image files' bytes unchanged")
    db.add_argument("--resize", type=int, default=0, help="resize the shorter edge of images to this size")
    db.add_argument("--center-crop", action="store_true", help="crop the central square first")
    db.add_argument("--quality", type=int, default=95, help="JPEG quality (1-100)")
    db.add_argument("--num-thread", type=int, default=1, help="threads encoding images")
    db.add_argument("--color", type=int, default=1, choices=[-1, 0, 1],
                    help="1 colour, 0 grey, -1 as stored (with alpha)")
    db.add_argument("--encoding", type=str, default=".jpg", choices=[".jpg", ".png"], help="image encoding")
    db.add_argument("--pack-label", action="store_true", help="store every label of a list line in the header")
    args = parser.parse_args(argv)
    args.prefix = os.path.abspath(args.prefix)
    args.root = os.path.abspath(args.root)
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.list:
        make_list(args)
        return 0
    folder = args.prefix if os.path.isdir(args.prefix) else os.path.dirname(args.prefix)
    lists = sorted(os.path.join(folder, f) for f in os.listdir(folder)
                   if os.path.join(folder, f).startswith(args.prefix) and f.endswith(".lst"))
    if not lists:
        print(f"no .lst file starting with {args.prefix}: make one with --list", file=sys.stderr)
        return 1
    for list_file in lists:
        print("Creating .rec file from", list_file, "in", folder)
        make_record(args, list_file)
    return 0


if __name__ == "__main__":
    sys.exit(main())
