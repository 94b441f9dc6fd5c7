//! The pipeline behind `mx.io.ImageDetRecordIter`: batches of decoded,
//! augmented and normalised images with their detection labels from a
//! RecordIO file, made on background threads ([`crate::record_pipeline`]).
//!
//! Each image goes through MXNet's detection augmenter
//! ([`crate::augment::det`]) and lands in the top-left corner of its
//! `data_shape` slot (zeros elsewhere, when `shrink` or `fit` leave it
//! smaller), RGB, channels first, then the normalisation `(v - mean) /
//! std · scale` (means only when one is positive, else the mean image
//! when given; deviations only where positive, as MXNet's detection
//! normaliser does; [`mean_image`] makes the mean image as MXNet does when
//! its file is missing: one pass of the pipeline without it, averaged).
//! Each label row is, as MXNet's: the image's channels, height and width
//! after augmentation, the number of label values, the label values
//! (header and kept objects), then `label_pad_value` up to `4 +
//! label_pad_width` values. `label_pad_width` 0 (or below the widest
//! label) is the widest label of the list or of this part's records.

use crate::augment::det::augment_det;
use crate::augment::det_params::DetAugmentParams;
use crate::det_label::DetLabel;
use crate::image::{decode, Channels, Image};
use crate::image_list::ImageList;
use crate::record_pipeline::{part_offsets, split_record, Batch, PipelineSettings, Prepare, RecordPipeline};
use crate::recordio::RecordReader;
use oxnet_core::{Error, Result};
use rand_pcg::Pcg64;
use std::path::PathBuf;
use std::sync::Arc;

/// What the detection pipeline reads and how it prepares each image.
#[derive(Clone, Debug)]
pub struct DetRecordConfig {
    /// Reading, shuffling, threads and batching.
    pub settings: PipelineSettings,
    /// The output shape of one image: (channels, height, width); 1, 3 or 4 channels.
    pub data_shape: [usize; 3],
    /// Label values per image, checked when positive; -1 any number.
    pub label_width: i64,
    /// Label values per row after the 4 leading ones; 0 the widest label.
    pub label_pad_width: i64,
    /// The value filling each label row after its values.
    pub label_pad_value: f32,
    /// An image list (`.lst`) whose labels replace the records' own, by image index.
    pub path_imglist: Option<PathBuf>,
    /// The detection augmenter's options.
    pub augment: DetAugmentParams,
    /// Per channel (R, G, B, alpha): subtracted when any is positive.
    pub mean: [f32; 4],
    /// Per channel: divided by where positive.
    pub std: [f32; 4],
    /// Multiplies at the end.
    pub scale: f32,
    /// A mean image (channels, height, width of `data_shape`, RGB),
    /// subtracted when no per-channel mean is positive.
    pub mean_img: Option<Arc<Vec<f32>>>,
}

impl DetRecordConfig {
    /// A configuration with MXNet's defaults for the rest.
    pub fn new(
        path_imgrec: impl Into<PathBuf>,
        batch_size: usize,
        data_shape: [usize; 3],
    ) -> DetRecordConfig {
        DetRecordConfig {
            settings: PipelineSettings {
                path_imgrec: path_imgrec.into(),
                batch_size,
                shuffle: false,
                seed: 0,
                threads: 4,
                prefetch: 4,
                round_batch: true,
                part_index: 0,
                num_parts: 1,
            },
            data_shape,
            label_width: -1,
            label_pad_width: 0,
            label_pad_value: -1.0,
            path_imglist: None,
            augment: DetAugmentParams::default(),
            mean: [0.0; 4],
            std: [0.0; 4],
            scale: 1.0,
            mean_img: None,
        }
    }

    fn check(&self) -> Result<()> {
        let bad =
            |name: &str, msg: String| Err(Error::attr(name, format!("ImageDetRecordIter: {name} {msg}")));
        if self.settings.batch_size == 0 {
            return bad("batch_size", "must be positive".into());
        }
        let [c, h, w] = self.data_shape;
        if !matches!(c, 1 | 3 | 4) || h == 0 || w == 0 {
            return bad(
                "data_shape",
                format!("must be (1, 3 or 4, height, width), got {:?}", self.data_shape),
            );
        }
        let s = &self.settings;
        if s.num_parts == 0 || s.part_index >= s.num_parts {
            return bad("part_index", format!("{} is not a part of {}", s.part_index, s.num_parts));
        }
        if self.label_width == 0 || self.label_width < -1 {
            return bad("label_width", format!("must be positive or -1, got {}", self.label_width));
        }
        if self.label_pad_width < -1 {
            return bad("label_pad_width", format!("must be at least -1, got {}", self.label_pad_width));
        }
        if let Some(m) = &self.mean_img {
            if m.len() != c * h * w {
                return bad(
                    "mean_img",
                    format!("holds {} values, the output (channels, height, width) {c}x{h}x{w}", m.len()),
                );
            }
        }
        self.augment.check()
    }
}

/// `ImageDetRecordIter`'s preparation of one record.
struct DetPrep {
    config: DetRecordConfig,
    list: Option<ImageList>,
    /// The label row's values after the 4 leading ones.
    pad_width: usize,
}

impl DetPrep {
    fn labels(&self, record_labels: Vec<f32>, image_index: u64) -> Result<Vec<f32>> {
        if let Some(list) = &self.list {
            return Ok(list.labels(image_index)?.to_vec());
        }
        let lw = self.config.label_width;
        if lw > 0 && record_labels.len() != lw as usize {
            return Err(Error::attr(
                "label_width",
                format!("the record has {} label values, label_width is {lw}", record_labels.len()),
            ));
        }
        Ok(record_labels)
    }

    /// Writes `img` into the top-left of `out` (c, h, w), normalised.
    fn write(&self, img: &Image, out: &mut [f32]) {
        let [c, h, w] = self.config.data_shape;
        for y in 0..img.height.min(h) {
            for x in 0..img.width.min(w) {
                let src = (y * img.width + x) * c;
                for k in 0..c {
                    out[(k * h + y) * w + x] = f32::from(img.data[src + k]);
                }
            }
        }
        let (mean, std) = (self.config.mean, self.config.std);
        let subtract = mean.iter().any(|&m| m > 0.0);
        // the mean image only without a positive mean per channel, as MXNet
        let mean_img = if subtract { None } else { self.config.mean_img.as_deref() };
        for (k, plane) in out.chunks_exact_mut(h * w).enumerate() {
            // channel k's mean and deviation: R for grey; alpha only with 4 channels
            let slot = if c == 1 { 0 } else { k };
            let (m, d) = (mean[slot], std[slot]);
            let plane_mean = mean_img.map(|mi| &mi[k * h * w..(k + 1) * h * w]);
            for (i, v) in plane.iter_mut().enumerate() {
                let mut t = *v;
                if subtract {
                    t -= m;
                } else if let Some(pm) = plane_mean {
                    t -= pm[i];
                }
                if d > 0.0 {
                    t /= d;
                }
                *v = t * self.config.scale;
            }
        }
    }
}

impl Prepare for DetPrep {
    fn name(&self) -> &'static str {
        "ImageDetRecordIter"
    }

    fn data_len(&self) -> usize {
        self.config.data_shape.iter().product()
    }

    fn label_len(&self) -> usize {
        self.pad_width + 4
    }

    fn prepare(&self, record: &[u8], rng: &mut Pcg64, data: &mut [f32], label: &mut [f32]) -> Result<()> {
        let (record_labels, image_index, payload) = split_record(record)?;
        let raw = self.labels(record_labels, image_index)?;
        let [c, h, w] = self.config.data_shape;
        let channels = match c {
            1 => Channels::Grey,
            3 => Channels::Colour,
            _ => Channels::AsStored,
        };
        let img = decode(payload, channels, false)?;
        if img.channels != c {
            return Err(Error::Invalid(format!(
                "image index {image_index}: {} channels, data_shape asks for {c}",
                img.channels
            )));
        }
        let mut det = DetLabel::parse(&raw)?;
        let img = augment_det(&self.config.augment, img, &mut det, (h, w), rng)?;
        self.write(&img, data);
        let values = det.to_vec();
        label.fill(self.config.label_pad_value);
        label[..4].copy_from_slice(&[
            img.channels as f32,
            img.height as f32,
            img.width as f32,
            values.len() as f32,
        ]);
        label[4..4 + values.len()].copy_from_slice(&values);
        Ok(())
    }
}

/// The widest label of the records at `offsets`, checking each against
/// a positive `label_width`.
fn widest_record_label(path: &std::path::Path, offsets: &[u64], label_width: i64) -> Result<usize> {
    let mut reader = RecordReader::open(path)?;
    let mut widest = 0;
    for &offset in offsets {
        reader.seek(offset)?;
        let record = reader.read()?.ok_or_else(|| {
            Error::Invalid(format!("ImageDetRecordIter: `{}` ends at offset {offset}", path.display()))
        })?;
        let (labels, _, _) = split_record(&record)?;
        if label_width > 0 && labels.len() != label_width as usize {
            return Err(Error::attr(
                "label_width",
                format!(
                    "ImageDetRecordIter: a record has {} label values, label_width is {label_width}",
                    labels.len()
                ),
            ));
        }
        widest = widest.max(labels.len());
    }
    Ok(widest)
}

/// A running detection pipeline: [`next_batch`](Self::next_batch) for
/// batches (labels of [`label_width`](Self::label_width) values per image)
/// and [`reset`](Self::reset) for the next epoch.
pub struct DetRecordIter {
    pipeline: RecordPipeline<DetPrep>,
}

impl DetRecordIter {
    /// Opens the file, finds this part's records and the label width, and
    /// starts the first epoch.
    pub fn new(config: DetRecordConfig) -> Result<DetRecordIter> {
        config.check()?;
        let offsets = part_offsets("ImageDetRecordIter", &config.settings)?;
        let list = match &config.path_imglist {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    Error::attr(
                        "path_imglist",
                        format!("ImageDetRecordIter: cannot read `{}`: {e}", path.display()),
                    )
                })?;
                Some(if config.label_width > 0 {
                    ImageList::parse(&text, config.label_width as usize)?
                } else {
                    ImageList::parse_variable(&text)?
                })
            }
            None => None,
        };
        let widest = match &list {
            Some(list) => list.max_width(),
            None => widest_record_label(&config.settings.path_imgrec, &offsets, config.label_width)?,
        };
        let pad_width = if widest as i64 > config.label_pad_width {
            if config.label_pad_width > 0 {
                return Err(Error::attr(
                    "label_pad_width",
                    format!(
                        "ImageDetRecordIter: label_pad_width {} is below the widest label, {widest}",
                        config.label_pad_width
                    ),
                ));
            }
            widest
        } else {
            config.label_pad_width as usize
        };
        let settings = config.settings.clone();
        let prep = DetPrep { config, list, pad_width };
        Ok(DetRecordIter { pipeline: RecordPipeline::new(settings, prep, offsets) })
    }

    /// The configuration it runs with.
    pub fn config(&self) -> &DetRecordConfig {
        &self.pipeline.prep().config
    }

    /// Values per label row: 4 plus the padded label width.
    pub fn label_width(&self) -> usize {
        self.pipeline.prep().label_len()
    }

    /// The number of records this reader serves per epoch.
    pub fn num_records(&self) -> usize {
        self.pipeline.num_records()
    }

    /// The next batch of this epoch, or `None` at its end.
    pub fn next_batch(&mut self) -> Result<Option<Batch>> {
        self.pipeline.next_batch()
    }

    /// Starts the next epoch (reshuffled when `shuffle`).
    pub fn reset(&mut self) {
        self.pipeline.reset()
    }
}

/// The mean image of this part's records as the pipeline prepares them
/// without a mean image (deviations, scale and a positive per-channel mean
/// still applied, as in MXNet's detection normaliser): one pass in file
/// order, channels first; MXNet's `mean_img` when its file is missing.
pub fn mean_image(config: &DetRecordConfig) -> Result<Vec<f32>> {
    let mut config = config.clone();
    config.mean_img = None;
    config.settings.shuffle = false;
    config.settings.round_batch = false;
    DetRecordIter::new(config)?.pipeline.mean_item()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mean_image_is_subtracted_unless_a_channel_mean_is_positive() {
        let mut config = DetRecordConfig::new("unused.rec", 1, [3, 1, 2]);
        config.std = [2.0, 0.0, 4.0, 0.0];
        config.scale = 0.5;
        config.mean_img = Some(Arc::new(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]));
        let img = Image::new(1, 2, 3, vec![10, 20, 30, 40, 50, 60]).unwrap();
        let write = |config: &DetRecordConfig| {
            let prep = DetPrep { config: config.clone(), list: None, pad_width: 0 };
            let mut out = vec![0f32; 6];
            prep.write(&img, &mut out);
            out
        };
        // planes R [10, 40], G [20, 50], B [30, 60] less the mean image,
        // divided by the positive deviations, halved
        assert_eq!(write(&config), vec![2.25, 9.5, 8.5, 23.0, 3.125, 6.75]);
        config.mean = [0.0, 5.0, 0.0, 0.0];
        assert_eq!(write(&config), vec![2.5, 10.0, 7.5, 22.5, 3.75, 7.5]);
        config.mean_img = Some(Arc::new(vec![0.0; 5]));
        assert!(config.check().unwrap_err().to_string().contains("mean_img"));
    }
}
