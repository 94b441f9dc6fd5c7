//! Images for `oxnet.image` and `oxnet.recordio` (`mx.image`,
//! `mx.recordio.pack_img`/`unpack_img`): decoding, encoding and resizing
//! `uint8` arrays of height × width × channels (`oxnet_io::image`,
//! `oxnet_io::resize`).

use crate::array::PyNDArray;
use crate::errors::IntoPyResult;
use oxnet_core::{DType, Error, NDArray, Result};
use oxnet_io::image::{decode, Channels, Image};
use oxnet_io::image_record_iter::{ImageRecordConfig, ImageRecordIter};
use oxnet_io::resize::{resize, Interp};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

fn to_array(img: Image) -> Result<NDArray> {
    NDArray::from_vec(img.data, &[img.height, img.width, img.channels])
}

/// The image an array holds: `uint8`, (height, width) or (height, width, channels).
fn from_array(a: &NDArray, what: &str) -> Result<Image> {
    if a.dtype() != DType::U8 {
        return Err(Error::DType(format!("{what} takes a uint8 image, got {}", a.dtype())));
    }
    let (h, w, c) = match *a.shape() {
        [h, w] => (h, w, 1),
        [h, w, c] => (h, w, c),
        ref s => {
            return Err(Error::Shape(format!(
                "{what} takes an image of shape (height, width[, channels]), got {s:?}"
            )))
        }
    };
    Image::new(h, w, c, a.to_vec::<u8>()?).map_err(|e| Error::Invalid(format!("{what}: {e}")))
}

/// Decodes JPEG or PNG bytes into a (height, width, channels) uint8 array:
/// `flag` 1 colour, 0 grey, -1 as stored; colour in RGB order, or BGR with `bgr`.
#[pyfunction]
pub fn image_decode(py: Python<'_>, data: &[u8], flag: i64, bgr: bool) -> PyResult<PyNDArray> {
    py.detach(|| decode(data, Channels::from_flag(flag), bgr).and_then(to_array)).map(PyNDArray::from).py()
}

/// Encodes a uint8 image as `.jpg` (with `quality`) or `.png`.
#[pyfunction]
pub fn image_encode<'py>(
    py: Python<'py>,
    img: PyRef<'_, PyNDArray>,
    format: &str,
    quality: u8,
    bgr: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    let bytes = from_array(&img.inner, "encoding").and_then(|i| i.encode(format, quality, bgr)).py()?;
    Ok(PyBytes::new(py, &bytes))
}

/// A uint8 image resized to `height × width` with interpolation `interp`
/// (OpenCV's numbers: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos, 9 auto).
#[pyfunction]
pub fn image_resize(
    py: Python<'_>,
    img: PyRef<'_, PyNDArray>,
    height: usize,
    width: usize,
    interp: i64,
) -> PyResult<PyNDArray> {
    let a = img.inner.clone();
    py.detach(|| {
        let src = from_array(&a, "imresize")?;
        let method = Interp::from_code(interp, (src.height, src.width), (height, width))?;
        let out = resize(&src, height, width, method)?;
        let mut shape = vec![height, width];
        if a.ndim() == 3 {
            shape.push(src.channels);
        }
        NDArray::from_vec(out.data, &shape)
    })
    .map(PyNDArray::from)
    .py()
}

/// `mx.io.ImageRecordIter`'s pipeline (`oxnet_io::image_record_iter`):
/// batches prepared on background threads.
#[pyclass(frozen, name = "ImageRecordPipeline", module = "oxnet._oxnet")]
pub struct ImageRecordPipeline {
    inner: std::sync::Mutex<ImageRecordIter>,
    shape: [usize; 4],
    label_width: usize,
}

fn floats<const N: usize>(v: Vec<f32>, what: &str) -> PyResult<[f32; N]> {
    v.try_into().map_err(|_| pyo3::exceptions::PyValueError::new_err(format!("{what} needs {N} values")))
}

#[pymethods]
impl ImageRecordPipeline {
    #[new]
    #[pyo3(signature = (path_imgrec, batch_size, data_shape, label_width, shuffle, seed, threads, prefetch,
                        round_batch, resize, rand_crop, rand_mirror, mirror, mean, std, scale, inter_method,
                        part_index, num_parts))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path_imgrec: String,
        batch_size: usize,
        data_shape: (usize, usize, usize),
        label_width: usize,
        shuffle: bool,
        seed: u64,
        threads: usize,
        prefetch: usize,
        round_batch: bool,
        resize: usize,
        rand_crop: bool,
        rand_mirror: bool,
        mirror: bool,
        mean: Vec<f32>,
        std: Vec<f32>,
        scale: f32,
        inter_method: i64,
        part_index: usize,
        num_parts: usize,
    ) -> PyResult<Self> {
        let (c, h, w) = data_shape;
        let mut config = ImageRecordConfig::new(path_imgrec, batch_size, [c, h, w]);
        config.label_width = label_width;
        config.shuffle = shuffle;
        config.seed = seed;
        config.threads = threads;
        config.prefetch = prefetch;
        config.round_batch = round_batch;
        config.resize = resize;
        config.rand_crop = rand_crop;
        config.rand_mirror = rand_mirror;
        config.mirror = mirror;
        config.mean = floats(mean, "mean")?;
        config.std = floats(std, "std")?;
        config.scale = scale;
        config.inter_method = inter_method;
        config.part_index = part_index;
        config.num_parts = num_parts;
        let it = py.detach(|| ImageRecordIter::new(config)).py()?;
        Ok(ImageRecordPipeline {
            inner: std::sync::Mutex::new(it),
            shape: [batch_size, c, h, w],
            label_width,
        })
    }

    /// The next batch as (data, label, pad), or None at the end of the epoch.
    fn next(&self, py: Python<'_>) -> PyResult<Option<(PyNDArray, PyNDArray, usize)>> {
        let batch = py.detach(|| self.inner.lock().unwrap_or_else(|e| e.into_inner()).next_batch()).py()?;
        let Some(b) = batch else { return Ok(None) };
        let data = NDArray::from_vec(b.data, &self.shape).py()?;
        let label_shape: Vec<usize> =
            if self.label_width > 1 { vec![self.shape[0], self.label_width] } else { vec![self.shape[0]] };
        let label = NDArray::from_vec(b.label, &label_shape).py()?;
        Ok(Some((data.into(), label.into(), b.pad)))
    }

    /// Starts the next epoch.
    fn reset(&self, py: Python<'_>) {
        py.detach(|| self.inner.lock().unwrap_or_else(|e| e.into_inner()).reset());
    }

    /// The records this reader serves per epoch.
    fn num_records(&self) -> usize {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).num_records()
    }
}
