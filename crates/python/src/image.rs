//! Images for `oxnet.image` and `oxnet.recordio` (`mx.image`,
//! `mx.recordio.pack_img`/`unpack_img`): decoding, encoding and resizing
//! `uint8` arrays of height × width × channels (`oxnet_io::image`,
//! `oxnet_io::resize`).

use crate::array::PyNDArray;
use crate::errors::IntoPyResult;
use oxnet_core::{DType, Error, NDArray, Result};
use oxnet_io::augment::det_params::{CropSamplerOptions, DetAugmentParams, ResizeMode};
use oxnet_io::augment::AugmentParams;
use oxnet_io::det_label::EmitMode;
use oxnet_io::det_record_iter::{self, DetRecordConfig, DetRecordIter};
use oxnet_io::image::{decode, Channels, Image};
use oxnet_io::image_normalize::OutputType;
use oxnet_io::image_record_iter::{mean_image, ImageRecordConfig, ImageRecordIter};
use oxnet_io::resize::{resize, Interp};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::sync::Arc;

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
    dtype: OutputType,
}

fn floats<const N: usize>(v: Vec<f32>, what: &str) -> PyResult<[f32; N]> {
    v.try_into().map_err(|_| pyo3::exceptions::PyValueError::new_err(format!("{what} needs {N} values")))
}

/// `options[key]` as a `T`, or `default` when absent or None.
fn option<'py, T: for<'a> FromPyObject<'a, 'py>>(
    options: &Bound<'py, PyDict>,
    key: &str,
    default: T,
) -> PyResult<T> {
    option_of("ImageRecordIter", options, key, default)
}

/// `options[key]` as a `T`, or `default` when absent or None; a wrong type
/// is a TypeError naming the iterator `iter` and the key.
fn option_of<'py, T: for<'a> FromPyObject<'a, 'py>>(
    iter: &str,
    options: &Bound<'py, PyDict>,
    key: &str,
    default: T,
) -> PyResult<T> {
    match options.get_item(key)? {
        Some(v) if !v.is_none() => v.extract::<T>().map_err(|e| {
            pyo3::exceptions::PyTypeError::new_err(format!("{iter}: {key}: {}", Into::<PyErr>::into(e)))
        }),
        _ => Ok(default),
    }
}

/// The augmentation, normalisation and label options of `options` (by
/// MXNet's argument names) set on `config`.
fn apply_options(config: &mut ImageRecordConfig, options: &Bound<'_, PyDict>) -> PyResult<()> {
    let d = AugmentParams::default();
    config.augment = AugmentParams {
        random_resized_crop: option(options, "random_resized_crop", d.random_resized_crop)?,
        max_rotate_angle: option(options, "max_rotate_angle", d.max_rotate_angle)?,
        max_aspect_ratio: option(options, "max_aspect_ratio", d.max_aspect_ratio)?,
        min_aspect_ratio: option(options, "min_aspect_ratio", d.min_aspect_ratio)?,
        max_shear_ratio: option(options, "max_shear_ratio", d.max_shear_ratio)?,
        max_crop_size: option(options, "max_crop_size", d.max_crop_size)?,
        min_crop_size: option(options, "min_crop_size", d.min_crop_size)?,
        max_random_scale: option(options, "max_random_scale", d.max_random_scale)?,
        min_random_scale: option(options, "min_random_scale", d.min_random_scale)?,
        max_random_area: option(options, "max_random_area", d.max_random_area)?,
        min_random_area: option(options, "min_random_area", d.min_random_area)?,
        max_img_size: option(options, "max_img_size", d.max_img_size)?,
        min_img_size: option(options, "min_img_size", d.min_img_size)?,
        brightness: option(options, "brightness", d.brightness)?,
        contrast: option(options, "contrast", d.contrast)?,
        saturation: option(options, "saturation", d.saturation)?,
        pca_noise: option(options, "pca_noise", d.pca_noise)?,
        random_h: option(options, "random_h", d.random_h)?,
        random_s: option(options, "random_s", d.random_s)?,
        random_l: option(options, "random_l", d.random_l)?,
        rotate: option(options, "rotate", d.rotate)?,
        fill_value: option(options, "fill_value", d.fill_value)?,
        pad: option(options, "pad", d.pad)?,
    };
    let n = &mut config.normalize;
    n.max_random_contrast = option(options, "max_random_contrast", 0.0)?;
    n.max_random_illumination = option(options, "max_random_illumination", 0.0)?;
    n.dtype = OutputType::from_name(&option(options, "dtype", "float32".to_string())?).py()?;
    n.mean_img = option::<Option<Vec<f32>>>(options, "mean_img", None)?.map(Arc::new);
    let list: String = option(options, "path_imglist", String::new())?;
    config.path_imglist = (!list.is_empty()).then(|| list.into());
    config.rotate_list = option(options, "rotate_list", Vec::new())?;
    Ok(())
}

#[pymethods]
impl ImageRecordPipeline {
    #[new]
    #[pyo3(signature = (path_imgrec, batch_size, data_shape, label_width, shuffle, seed, threads, prefetch,
                        round_batch, resize, rand_crop, rand_mirror, mirror, mean, std, scale, inter_method,
                        part_index, num_parts, options))]
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
        options: &Bound<'_, PyDict>,
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
        config.normalize.mean = floats(mean, "mean")?;
        config.normalize.std = floats(std, "std")?;
        config.normalize.scale = scale;
        config.inter_method = inter_method;
        config.part_index = part_index;
        config.num_parts = num_parts;
        apply_options(&mut config, options)?;
        let dtype = config.normalize.dtype;
        let it = py.detach(|| ImageRecordIter::new(config)).py()?;
        Ok(ImageRecordPipeline {
            inner: std::sync::Mutex::new(it),
            shape: [batch_size, c, h, w],
            label_width,
            dtype,
        })
    }

    /// The next batch as (data, label, pad), or None at the end of the epoch.
    fn next(&self, py: Python<'_>) -> PyResult<Option<(PyNDArray, PyNDArray, usize)>> {
        let batch = py.detach(|| self.inner.lock().unwrap_or_else(|e| e.into_inner()).next_batch()).py()?;
        let Some(b) = batch else { return Ok(None) };
        let data = match self.dtype {
            OutputType::Float32 => NDArray::from_vec(b.data, &self.shape),
            // integer outputs come as their values in f32
            OutputType::UInt8 => NDArray::from_vec(b.data.iter().map(|&v| v as u8).collect(), &self.shape),
            OutputType::Int8 => NDArray::from_vec(b.data.iter().map(|&v| v as i8).collect(), &self.shape),
        }
        .py()?;
        let label_shape: Vec<usize> =
            if self.label_width > 1 { vec![self.shape[0], self.label_width] } else { vec![self.shape[0]] };
        let label = NDArray::from_vec(b.label, &label_shape).py()?;
        Ok(Some((data.into(), label.into(), b.pad)))
    }

    /// Starts the next epoch.
    fn reset(&self, py: Python<'_>) {
        py.detach(|| self.inner.lock().unwrap_or_else(|e| e.into_inner()).reset());
    }

    /// The mean image (channels, height, width, flat) of one pass over
    /// this reader's records, prepared as float32 without a mean image.
    fn mean_image(&self, py: Python<'_>) -> PyResult<Vec<f32>> {
        let config = self.inner.lock().unwrap_or_else(|e| e.into_inner()).config().clone();
        py.detach(|| mean_image(&config)).py()
    }

    /// The records this reader serves per epoch.
    fn num_records(&self) -> usize {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).num_records()
    }
}

/// `mx.io.ImageDetRecordIter`'s pipeline (`oxnet_io::det_record_iter`):
/// detection batches prepared on background threads.
#[pyclass(frozen, name = "DetRecordPipeline", module = "oxnet._oxnet")]
pub struct DetRecordPipeline {
    inner: std::sync::Mutex<DetRecordIter>,
    shape: [usize; 4],
    label_width: usize,
}

/// The detection options of `options` (MXNet's argument names) set on `config`.
fn apply_det_options(config: &mut DetRecordConfig, o: &Bound<'_, PyDict>) -> PyResult<()> {
    let opt = |key: &str, default: f32| option_of("ImageDetRecordIter", o, key, default);
    let int = |key: &str, default: i64| option_of("ImageDetRecordIter", o, key, default);
    let list = |key: &str, default: Vec<f32>| option_of("ImageDetRecordIter", o, key, default);
    let s = &mut config.settings;
    s.shuffle = option_of("ImageDetRecordIter", o, "shuffle", false)?;
    s.seed = int("seed", 0)? as u64;
    s.threads = int("preprocess_threads", 4)?.max(1) as usize;
    s.prefetch = int("prefetch_buffer", 4)?.max(1) as usize;
    s.round_batch = option_of("ImageDetRecordIter", o, "round_batch", true)?;
    s.part_index = int("part_index", 0)?.max(0) as usize;
    s.num_parts = int("num_parts", 1)?.max(0) as usize;
    config.label_width = int("label_width", -1)?;
    config.label_pad_width = int("label_pad_width", 0)?;
    config.label_pad_value = opt("label_pad_value", -1.0)?;
    let imglist: String = option_of("ImageDetRecordIter", o, "path_imglist", String::new())?;
    config.path_imglist = (!imglist.is_empty()).then(|| imglist.into());
    config.mean = [opt("mean_r", 0.0)?, opt("mean_g", 0.0)?, opt("mean_b", 0.0)?, opt("mean_a", 0.0)?];
    config.std = [opt("std_r", 0.0)?, opt("std_g", 0.0)?, opt("std_b", 0.0)?, opt("std_a", 0.0)?];
    config.scale = opt("scale", 1.0)?;
    config.mean_img = option_of::<Option<Vec<f32>>>("ImageDetRecordIter", o, "mean_img", None)?.map(Arc::new);
    let d = CropSamplerOptions::default();
    let samplers = CropSamplerOptions {
        min_crop_scales: list("min_crop_scales", d.min_crop_scales)?,
        max_crop_scales: list("max_crop_scales", d.max_crop_scales)?,
        min_crop_aspect_ratios: list("min_crop_aspect_ratios", d.min_crop_aspect_ratios)?,
        max_crop_aspect_ratios: list("max_crop_aspect_ratios", d.max_crop_aspect_ratios)?,
        min_crop_overlaps: list("min_crop_overlaps", d.min_crop_overlaps)?,
        max_crop_overlaps: list("max_crop_overlaps", d.max_crop_overlaps)?,
        min_crop_sample_coverages: list("min_crop_sample_coverages", d.min_crop_sample_coverages)?,
        max_crop_sample_coverages: list("max_crop_sample_coverages", d.max_crop_sample_coverages)?,
        min_crop_object_coverages: list("min_crop_object_coverages", d.min_crop_object_coverages)?,
        max_crop_object_coverages: list("max_crop_object_coverages", d.max_crop_object_coverages)?,
        max_crop_trials: option_of("ImageDetRecordIter", o, "max_crop_trials", d.max_crop_trials)?,
    };
    let emit: String = option_of("ImageDetRecordIter", o, "crop_emit_mode", "center".to_string())?;
    let mode: String = option_of("ImageDetRecordIter", o, "resize_mode", "force".to_string())?;
    let p = DetAugmentParams::default();
    config.augment = DetAugmentParams {
        resize: int("resize", p.resize)?,
        rand_crop_prob: opt("rand_crop_prob", p.rand_crop_prob)?,
        samplers: samplers.samplers(int("num_crop_sampler", 1)?).py()?,
        crop_emit_mode: EmitMode::from_name(&emit).py()?,
        emit_overlap_thresh: opt("emit_overlap_thresh", p.emit_overlap_thresh)?,
        rand_pad_prob: opt("rand_pad_prob", p.rand_pad_prob)?,
        max_pad_scale: opt("max_pad_scale", p.max_pad_scale)?,
        max_random_hue: int("max_random_hue", 0)? as i32,
        random_hue_prob: opt("random_hue_prob", p.random_hue_prob)?,
        max_random_saturation: int("max_random_saturation", 0)? as i32,
        random_saturation_prob: opt("random_saturation_prob", p.random_saturation_prob)?,
        max_random_illumination: int("max_random_illumination", 0)? as i32,
        random_illumination_prob: opt("random_illumination_prob", p.random_illumination_prob)?,
        max_random_contrast: opt("max_random_contrast", p.max_random_contrast)?,
        random_contrast_prob: opt("random_contrast_prob", p.random_contrast_prob)?,
        rand_mirror_prob: opt("rand_mirror_prob", p.rand_mirror_prob)?,
        fill_value: int("fill_value", i64::from(p.fill_value))? as i32,
        inter_method: int("inter_method", p.inter_method)?,
        resize_mode: ResizeMode::from_name(&mode).py()?,
    };
    Ok(())
}

#[pymethods]
impl DetRecordPipeline {
    #[new]
    fn new(
        py: Python<'_>,
        path_imgrec: String,
        batch_size: usize,
        data_shape: (usize, usize, usize),
        options: &Bound<'_, PyDict>,
    ) -> PyResult<Self> {
        let (c, h, w) = data_shape;
        let mut config = DetRecordConfig::new(path_imgrec, batch_size, [c, h, w]);
        apply_det_options(&mut config, options)?;
        let it = py.detach(|| DetRecordIter::new(config)).py()?;
        let label_width = it.label_width();
        Ok(DetRecordPipeline { inner: std::sync::Mutex::new(it), shape: [batch_size, c, h, w], label_width })
    }

    /// Values per label row (4 plus the padded label width).
    #[getter]
    fn label_width(&self) -> usize {
        self.label_width
    }

    /// The mean image (channels, height, width, flat) of one pass over
    /// this reader's records, prepared without a mean image.
    fn mean_image(&self, py: Python<'_>) -> PyResult<Vec<f32>> {
        let config = self.inner.lock().unwrap_or_else(|e| e.into_inner()).config().clone();
        py.detach(|| det_record_iter::mean_image(&config)).py()
    }

    /// The next batch as (data, label, pad), or None at the end of the epoch.
    fn next(&self, py: Python<'_>) -> PyResult<Option<(PyNDArray, PyNDArray, usize)>> {
        let batch = py.detach(|| self.inner.lock().unwrap_or_else(|e| e.into_inner()).next_batch()).py()?;
        let Some(b) = batch else { return Ok(None) };
        let data = NDArray::from_vec(b.data, &self.shape).py()?;
        let label = NDArray::from_vec(b.label, &[self.shape[0], self.label_width]).py()?;
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
