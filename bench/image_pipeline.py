"""Side-by-side throughput of ``mx.io.ImageRecordIter`` (oxnet's Rust
pipeline against MXNet 1.9.1's C++ one) on the same RecordIO file of
JPEGs, ImageNet-style: shorter side resized to 256, random 224×224 crop,
random mirror, mean/std normalisation, batch 32.

    bash bench/image_pipeline.sh     # builds oxnet in release mode and the side venvs, then runs this
    bash bench/image_pipeline.sh --imagenet   # the ImageNet training augmentations instead

``--imagenet`` replaces resize and random crop by the usual ImageNet
training set: ``random_resized_crop`` (area 0.08 to 1, aspect ratio 3/4 to
4/3), random mirror, ``brightness``/``contrast``/``saturation`` 0.4 and
``pca_noise`` 0.1.

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
N_IMAGES, BATCH = 512, 32
# the augmentations of each variant (both with mean/std normalisation)
VARIANTS = {
    "default": dict(resize=256, rand_crop=True, rand_mirror=True),
    "imagenet": dict(random_resized_crop=True, min_random_area=0.08, max_random_area=1.0, min_aspect_ratio=3 / 4,
                     max_aspect_ratio=4 / 3, rand_mirror=True, brightness=0.4, contrast=0.4, saturation=0.4,
                     pca_noise=0.1),
}
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


def run(engine):
    import importlib
    mx = importlib.import_module(engine)
    it = mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 224, 224), batch_size=BATCH, mean_r=123.68,
                               mean_g=116.28, mean_b=103.53, std_r=58.395, std_g=57.12, std_b=57.375,
                               preprocess_threads=os.cpu_count(), prefetch_buffer=4, **VARIANTS[VARIANT])

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
    if "--imagenet" in os.sys.argv:
        # the engines' runs (child processes) read it from the environment
        os.environ["IMAGE_PIPELINE_VARIANT"] = VARIANT = "imagenet"
        os.sys.argv.remove("--imagenet")
    if "--engine" not in os.sys.argv:
        make_file()
    figures = side_by_side.main(__file__, ENGINES)
    if figures is None:
        return
    what = ("random resized crop 224, mirror, brightness/contrast/saturation 0.4, PCA noise 0.1"
            if VARIANT == "imagenet" else "resize 256, random crop 224, mirror")
    print(f"ImageRecordIter, {N_IMAGES} JPEGs 500x375 -> {what}, normalise; "
          f"batch {BATCH}, {os.cpu_count()} threads (images/s):")
    for engine in ("oxnet", "mxnet"):
        if f"{engine}_ips" in figures:
            print(f"  {engine:6s} {figures[f'{engine}_ips']:9.1f}")
    if "oxnet_ips" in figures and "mxnet_ips" in figures:
        print(f"  oxnet / MXNet: {figures['oxnet_ips'] / figures['mxnet_ips']:.2f} (target >= 1)")


if __name__ == "__main__":
    main()
