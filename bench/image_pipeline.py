"""Side-by-side throughput of ``mx.io.ImageRecordIter`` (oxnet's Rust
pipeline against MXNet 1.9.1's C++ one) on the same RecordIO file of
JPEGs, ImageNet-style: shorter side resized to 256, random 224×224 crop,
random mirror, mean/std normalisation, batch 32.

    bash bench/image_pipeline.sh     # builds oxnet in release mode and the side venvs, then runs this
    bash bench/image_pipeline.sh --imagenet   # the ImageNet training augmentations instead
    bash bench/image_pipeline.sh --det        # ImageDetRecordIter, SSD-style augmentations

``--imagenet`` replaces resize and random crop by the usual ImageNet
training set: ``random_resized_crop`` (area 0.08 to 1, aspect ratio 3/4 to
4/3), random mirror, ``brightness``/``contrast``/``saturation`` 0.4 and
``pca_noise`` 0.1. ``--det`` reads the same images with two boxes each
through ``ImageDetRecordIter``: an SSD-style random crop (scale 0.3 to 1,
aspect ratio 1/2 to 2, overlap at least 0.5) with probability 1/2, random
pad up to twice the size with probability 1/2, mirror with probability 1/2,
forced resize to 300×300.

The file (``target/bench-images.rec``, 512 synthetic 500×375 JPEGs at
quality 90, written by oxnet once) is shared by both engines; each engine
runs in its own interpreter (this file re-runs itself with ``--engine``),
the engines taking turns over the rounds. Figures: images per second over
two epochs after a warm-up epoch, with ``preprocess_threads`` set to the
machine's cores. To keep ResNet-18 fed on this machine the pipeline must
outrun the training step, whose images per second bench/conv.py measures.
"""

import os
import time

import side_by_side

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REC = os.path.join(ROOT, "target", "bench-images.rec")
DET_REC = os.path.join(ROOT, "target", "bench-det-images.rec")
N_IMAGES, BATCH = 512, 32
# the augmentations of each variant (both with mean/std normalisation)
VARIANTS = {
    "default": dict(resize=256, rand_crop=True, rand_mirror=True),
    "imagenet": dict(random_resized_crop=True, min_random_area=0.08, max_random_area=1.0, min_aspect_ratio=3 / 4,
                     max_aspect_ratio=4 / 3, rand_mirror=True, brightness=0.4, contrast=0.4, saturation=0.4,
                     pca_noise=0.1),
}
DET_AUG = dict(rand_crop_prob=0.5, min_crop_scales=(0.3,), max_crop_scales=(1.0,), min_crop_aspect_ratios=(0.5,),
               max_crop_aspect_ratios=(2.0,), min_crop_overlaps=(0.5,), max_crop_trials=(25,), rand_pad_prob=0.5,
               max_pad_scale=2.0, rand_mirror_prob=0.5, resize_mode="force")
VARIANT = os.environ.get("IMAGE_PIPELINE_VARIANT", "default")


def make_file():
    """Writes the benchmark's .rec (with oxnet, from .venv) unless it exists."""
    if os.path.exists(REC):
        return
    import numpy as np
    import oxnet as mx
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:375, 0:500].astype(np.float32)
    os.makedirs(os.path.dirname(REC), exist_ok=True)
    rec = mx.recordio.MXRecordIO(REC + ".tmp", "w")
    for k in range(N_IMAGES):
        f = rng.uniform(5, 40, 3)
        img = 128 + 100 * np.stack([np.sin(x / f[0] + k), np.cos(y / f[1]), np.sin((x + y) / f[2])], axis=2)
        img += rng.normal(0, 12, img.shape)
        rec.write(mx.recordio.pack_img((0, float(k % 1000), k, 0), np.clip(img, 0, 255).astype(np.uint8),
                                       quality=90, img_fmt=".jpg"))
    rec.close()
    os.replace(REC + ".tmp", REC)


def make_det_file():
    """Writes the detection benchmark's .rec: the same images, each with two
    boxes (MXNet's label layout: header 2, object width 5)."""
    if os.path.exists(DET_REC):
        return
    import oxnet as mx
    src = mx.recordio.MXRecordIO(REC, "r")
    out = mx.recordio.MXRecordIO(DET_REC + ".tmp", "w")
    for k in range(N_IMAGES):
        header, image = mx.recordio.unpack(src.read())
        label = [2, 5, 0, 0.1, 0.15, 0.45, 0.6, 1, 0.5, 0.3, 0.95, 0.9]
        out.write(mx.recordio.pack(mx.recordio.IRHeader(0, label, k, 0), image))
    out.close()
    src.close()
    os.replace(DET_REC + ".tmp", DET_REC)


def run(engine):
    import importlib
    mx = importlib.import_module(engine)
    norm = dict(mean_r=123.68, mean_g=116.28, mean_b=103.53, std_r=58.395, std_g=57.12, std_b=57.375)
    if VARIANT == "det":
        it = mx.io.ImageDetRecordIter(path_imgrec=DET_REC, data_shape=(3, 300, 300), batch_size=BATCH,
                                      preprocess_threads=os.cpu_count(), **norm, **DET_AUG)
    else:
        it = mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 224, 224), batch_size=BATCH,
                                   preprocess_threads=os.cpu_count(), prefetch_buffer=4, **norm,
                                   **VARIANTS[VARIANT])

    def epoch():
        n = 0
        for batch in it:
            batch.data[0].wait_to_read()
            n += batch.data[0].shape[0] - batch.pad
        it.reset()
        return n

    epoch()  # warm-up
    start = time.perf_counter()
    images = epoch() + epoch()
    return {f"{engine}_ips": images / (time.perf_counter() - start)}


ENGINES = {"oxnet": (".venv", lambda: run("oxnet")), "mxnet": (".venv-mxnet", lambda: run("mxnet"))}


def main():
    global VARIANT
    for flag in ("imagenet", "det"):
        if f"--{flag}" in os.sys.argv:
            # the engines' runs (child processes) read it from the environment
            os.environ["IMAGE_PIPELINE_VARIANT"] = VARIANT = flag
            os.sys.argv.remove(f"--{flag}")
    if "--engine" not in os.sys.argv:
        make_file()
        make_det_file()
    figures = side_by_side.main(__file__, ENGINES)
    if figures is None:
        return
    what = {"imagenet": "random resized crop 224, mirror, brightness/contrast/saturation 0.4, PCA noise 0.1",
            "det": "SSD crop/pad/mirror with probability 1/2, force resize 300",
            "default": "resize 256, random crop 224, mirror"}[VARIANT]
    iterator = "ImageDetRecordIter" if VARIANT == "det" else "ImageRecordIter"
    print(f"{iterator}, {N_IMAGES} JPEGs 500x375 -> {what}, normalise; "
          f"batch {BATCH}, {os.cpu_count()} threads (images/s):")
    for engine in ("oxnet", "mxnet"):
        if f"{engine}_ips" in figures:
            print(f"  {engine:6s} {figures[f'{engine}_ips']:9.1f}")
    if "oxnet_ips" in figures and "mxnet_ips" in figures:
        print(f"  oxnet / MXNet: {figures['oxnet_ips'] / figures['mxnet_ips']:.2f} (target >= 1)")


if __name__ == "__main__":
    main()
