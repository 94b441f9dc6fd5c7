//! The image pipeline behind `mx.io.ImageRecordIter`: batches of decoded,
//! augmented and normalised images from a RecordIO file, made on
//! background threads while the consumer trains.
//!
//! A producer thread ([`crate::record_pipeline`]) reads the records of each batch in order (or in a
//! seeded shuffled order), decodes and augments them in parallel on
//! `threads` threads, and hands finished batches over a bounded queue
//! (`prefetch` batches ahead). The augmentation follows MXNet's default
//! image augmenter ([`crate::augment`]: resize of the shorter side, affine
//! warp, padding, crops, colour, HSL and PCA jitter), mirroring, then the
//! output type's normalisation ([`crate::image_normalize`]), channels
//! first, RGB.
//! Each image's random draws come from a generator seeded by the seed, the
//! epoch and the image's position, so a run is the same for any number of
//! threads (MXNet's depend on which thread takes which image).

use crate::augment::{augment, AugmentParams};
use crate::image::{decode, Channels};
use crate::image_list::ImageList;
use crate::image_normalize::Normalize;
use crate::record_pipeline::{part_offsets, split_record, PipelineSettings, Prepare, RecordPipeline};
use oxnet_core::{Error, Result};
use rand::Rng;
use rand_pcg::Pcg64;
use std::path::PathBuf;
use std::sync::Arc;

/// What the pipeline reads and how it prepares each image.
#[derive(Clone, Debug)]
pub struct ImageRecordConfig {
    /// The `.rec` file.
    pub path_imgrec: PathBuf,
    /// Images per batch.
    pub batch_size: usize,
    /// The output shape of one image: (channels, height, width); 1, 3 or 4
    /// (colour and alpha) channels.
    pub data_shape: [usize; 3],
    /// Labels per image (from the record header's label array, or from `path_imglist`).
    pub label_width: usize,
    /// Shuffles the records of this part at each epoch.
    pub shuffle: bool,
    /// The seed of the shuffles and the random augmentations.
    pub seed: u64,
    /// Threads decoding and augmenting.
    pub threads: usize,
    /// Batches prepared ahead.
    pub prefetch: usize,
    /// Fills the last batch of an epoch from the start (else zeros) and
    /// reports how many were added as its `pad`; as MXNet's round robin,
    /// the next epoch then starts after the records used as padding.
    pub round_batch: bool,
    /// Resizes the shorter side to this first (0: no).
    pub resize: usize,
    /// A random crop (else the central one).
    pub rand_crop: bool,
    /// Mirrors half the images at random.
    pub rand_mirror: bool,
    /// Mirrors every image.
    pub mirror: bool,
    /// The output's type and normalisation (mean, deviation, scale, mean
    /// image, random contrast and illumination).
    pub normalize: Normalize,
    /// The default augmenter's other options (warp, crops, colour).
    pub augment: AugmentParams,
    /// An image list (`.lst`) whose labels replace the records' own, found
    /// by each record's image index.
    pub path_imglist: Option<PathBuf>,
    /// OpenCV's interpolation number (0 to 4, 9 auto, 10 random).
    pub inter_method: i64,
    /// MXNet's `rotate_list`: when not empty, every image is warped, by an
    /// angle (degrees) drawn uniformly from the list, which overrides
    /// `rotate` and `max_rotate_angle` (kept here, not in
    /// [`AugmentParams`], which its callers build field by field).
    pub rotate_list: Vec<i32>,
    /// This reader's part (of `num_parts`), for distributed training.
    pub part_index: usize,
    /// The number of parts the file is split into.
    pub num_parts: usize,
}

impl ImageRecordConfig {
    /// A configuration with MXNet's defaults for the rest.
    pub fn new(
        path_imgrec: impl Into<PathBuf>,
        batch_size: usize,
        data_shape: [usize; 3],
    ) -> ImageRecordConfig {
        ImageRecordConfig {
            path_imgrec: path_imgrec.into(),
            batch_size,
            data_shape,
            label_width: 1,
            shuffle: false,
            seed: 0,
            threads: 4,
            prefetch: 4,
            round_batch: true,
            resize: 0,
            rand_crop: false,
            rand_mirror: false,
            mirror: false,
            normalize: Normalize::default(),
            augment: AugmentParams::default(),
            path_imglist: None,
            inter_method: 1,
            rotate_list: Vec::new(),
            part_index: 0,
            num_parts: 1,
        }
    }

    fn check(&self) -> Result<()> {
        let bad = |name: &str, msg: String| Err(Error::attr(name, format!("ImageRecordIter: {msg}")));
        if self.batch_size == 0 {
            return bad("batch_size", "must be positive".into());
        }
        let [c, h, w] = self.data_shape;
        if !matches!(c, 1 | 3 | 4) || h == 0 || w == 0 {
            return bad(
                "data_shape",
                format!("must be (1, 3 or 4, height, width), got {:?}", self.data_shape),
            );
        }
        if self.num_parts == 0 || self.part_index >= self.num_parts {
            return bad("part_index", format!("{} is not a part of {}", self.part_index, self.num_parts));
        }
        if self.label_width == 0 {
            return bad("label_width", "must be positive".into());
        }
        if !matches!(self.inter_method, 0..=4 | 9 | 10) {
            return bad("inter_method", format!("{} is not 0 to 4, 9 or 10", self.inter_method));
        }
        let n = &self.normalize;
        for (name, std) in ["std_r", "std_g", "std_b", "std_a"].into_iter().zip(n.std) {
            if std == 0.0 {
                return bad(name, "a standard deviation of 0".into());
            }
        }
        for (name, v) in [
            ("max_random_contrast", n.max_random_contrast),
            ("max_random_illumination", n.max_random_illumination),
        ] {
            if v.is_nan() || v < 0.0 {
                return bad(name, format!("must be non-negative, got {v}"));
            }
        }
        if let Some(m) = &n.mean_img {
            if m.len() != c * h * w {
                return bad(
                    "mean_img",
                    format!("holds {} values, the output (channels, height, width) {c}x{h}x{w}", m.len()),
                );
            }
        }
        self.augment.check(self.rand_crop)
    }
}

pub use crate::record_pipeline::Batch;

/// `ImageRecordIter`'s preparation of one record.
struct ImagePrep {
    config: Arc<ImageRecordConfig>,
    labels: Option<Arc<ImageList>>,
}

impl Prepare for ImagePrep {
    fn name(&self) -> &'static str {
        "ImageRecordIter"
    }

    fn data_len(&self) -> usize {
        self.config.data_shape.iter().product()
    }

    fn label_len(&self) -> usize {
        self.config.label_width
    }

    fn prepare(&self, record: &[u8], rng: &mut Pcg64, data: &mut [f32], label: &mut [f32]) -> Result<()> {
        let labels = prepare(&self.config, self.labels.as_deref(), record, rng, data)?;
        label.copy_from_slice(&labels);
        Ok(())
    }
}

/// A running pipeline: call [`next_batch`](Self::next_batch) for batches and
/// [`reset`](Self::reset) for the next epoch.
pub struct ImageRecordIter {
    pipeline: RecordPipeline<ImagePrep>,
}

impl ImageRecordIter {
    /// Opens the file, finds this part's records and starts the first epoch.
    pub fn new(config: ImageRecordConfig) -> Result<ImageRecordIter> {
        config.check()?;
        let settings = PipelineSettings {
            path_imgrec: config.path_imgrec.clone(),
            batch_size: config.batch_size,
            shuffle: config.shuffle,
            seed: config.seed,
            threads: config.threads,
            prefetch: config.prefetch,
            round_batch: config.round_batch,
            part_index: config.part_index,
            num_parts: config.num_parts,
        };
        let offsets = part_offsets("ImageRecordIter", &settings)?;
        let labels = match &config.path_imglist {
            Some(path) => Some(Arc::new(ImageList::read(path, config.label_width)?)),
            None => None,
        };
        let prep = ImagePrep { config: Arc::new(config), labels };
        Ok(ImageRecordIter { pipeline: RecordPipeline::new(settings, prep, offsets) })
    }

    /// The configuration it runs with.
    pub fn config(&self) -> &ImageRecordConfig {
        &self.pipeline.prep().config
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

/// Prepares one image record into `out` (c, h, w) and returns its labels
/// (from `list` by the record's image index when given, else its header's).
fn prepare(
    config: &ImageRecordConfig,
    list: Option<&ImageList>,
    record: &[u8],
    rng: &mut Pcg64,
    out: &mut [f32],
) -> Result<Vec<f32>> {
    let (mut labels, image_index, payload) = split_record(record)?;
    if let Some(list) = list {
        labels = list.labels(image_index)?.to_vec();
    }
    let lw = config.label_width;
    if labels.len() < lw {
        return Err(Error::Invalid(format!("{} labels, label_width is {lw}", labels.len())));
    }
    labels.truncate(lw);
    let c = config.data_shape[0];
    let channels = match c {
        1 => Channels::Grey,
        3 => Channels::Colour,
        _ => Channels::AsStored,
    };
    let img = decode(payload, channels, false)?;
    if img.channels != c {
        return Err(Error::Invalid(format!(
            "an image of {} channels, data_shape asks for {c}",
            img.channels
        )));
    }
    let img = augment(config, img, rng)?;
    let mirrored = config.mirror || (config.rand_mirror && rng.random_bool(0.5));
    config.normalize.write(&img, mirrored, rng, out);
    Ok(labels)
}

/// The mean of this part's images as the pipeline prepares them for a
/// `float32` output without a mean image (MXNet's `mean_img` when its file
/// is absent): one pass over the records in file order, channels first.
pub fn mean_image(config: &ImageRecordConfig) -> Result<Vec<f32>> {
    let mut config = config.clone();
    config.normalize.mean_img = None;
    config.normalize.dtype = crate::image_normalize::OutputType::Float32;
    config.shuffle = false;
    config.round_batch = false;
    ImageRecordIter::new(config)?.pipeline.mean_item()
}
