//! Images for `oxnet.image` and `oxnet.recordio` (`mx.image`,
//! `mx.recordio.pack_img`/`unpack_img`): decoding, encoding and resizing
//! `uint8` arrays of height × width × channels (`oxnet_io::image`,
//! `oxnet_io::resize`).

use crate::array::PyNDArray;
use crate::errors::IntoPyResult;
use oxnet_core::{DType, Error, NDArray, Result};
use oxnet_io::image::{decode, Channels, Image};
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
