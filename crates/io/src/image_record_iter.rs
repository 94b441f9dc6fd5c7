//! The image pipeline behind `mx.io.ImageRecordIter`: batches of decoded,
//! augmented and normalised images from a RecordIO file, made on
//! background threads while the consumer trains.
//!
//! A producer thread reads the records of each batch in order (or in a
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
use crate::recordio::RecordReader;
use oxnet_core::{Error, Result};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;

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

/// One batch: `data` (batch, c, h, w) and `label` (batch, label_width),
/// row-major; the last `pad` images repeat the epoch's first ones (or are
/// zeros without `round_batch`).
#[derive(Debug)]
pub struct Batch {
    /// The images.
    pub data: Vec<f32>,
    /// The labels.
    pub label: Vec<f32>,
    /// How many images at the end are padding.
    pub pad: usize,
}

/// A running pipeline: call [`next_batch`](Self::next_batch) for batches and
/// [`reset`](Self::reset) for the next epoch.
pub struct ImageRecordIter {
    config: Arc<ImageRecordConfig>,
    /// Record offsets of this part, in file order.
    offsets: Arc<Vec<u64>>,
    /// The labels of `path_imglist`.
    labels: Option<Arc<ImageList>>,
    epoch: u64,
    /// Where in its order this epoch starts (after the last one's padding).
    start: usize,
    worker: Option<Worker>,
}

struct Worker {
    batches: Receiver<Result<Batch>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // unblock a producer waiting on a full queue, then wait for it
        while self.batches.try_recv().is_ok() {}
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl ImageRecordIter {
    /// Opens the file, finds this part's records and starts the first epoch.
    pub fn new(config: ImageRecordConfig) -> Result<ImageRecordIter> {
        config.check()?;
        let mut reader = RecordReader::open(&config.path_imgrec)?;
        let all = reader.offsets()?;
        // parts split the file by bytes at record starts, as dmlc-core's input splits do
        let size = reader.size();
        let (from, to) = (
            size * config.part_index as u64 / config.num_parts as u64,
            size * (config.part_index as u64 + 1) / config.num_parts as u64,
        );
        let offsets: Vec<u64> = all.into_iter().filter(|&o| o >= from && o < to).collect();
        if offsets.is_empty() {
            return Err(Error::Invalid(format!(
                "ImageRecordIter: `{}` holds no records for part {} of {}",
                config.path_imgrec.display(),
                config.part_index,
                config.num_parts
            )));
        }
        let labels = match &config.path_imglist {
            Some(path) => Some(Arc::new(ImageList::read(path, config.label_width)?)),
            None => None,
        };
        let mut it = ImageRecordIter {
            config: Arc::new(config),
            offsets: Arc::new(offsets),
            labels,
            epoch: 0,
            start: 0,
            worker: None,
        };
        it.spawn_epoch();
        Ok(it)
    }

    /// The configuration it runs with.
    pub fn config(&self) -> &ImageRecordConfig {
        &self.config
    }

    /// The number of records this reader serves per epoch.
    pub fn num_records(&self) -> usize {
        self.offsets.len()
    }

    fn spawn_epoch(&mut self) {
        self.worker = None;
        let (tx, rx) = sync_channel(self.config.prefetch.max(1));
        let stop = Arc::new(AtomicBool::new(false));
        let (epoch, start) = (self.epoch, self.start);
        let (config, offsets, flag) = (self.config.clone(), self.offsets.clone(), stop.clone());
        let labels = self.labels.clone();
        let thread = std::thread::Builder::new()
            .name("oxnet-image-record-iter".into())
            .spawn(move || {
                let mut producer = match Producer::new(&config, labels.as_deref(), &offsets, epoch, start) {
                    Ok(p) => p,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                while !flag.load(Ordering::Relaxed) {
                    match producer.batch() {
                        Ok(Some(b)) => {
                            if tx.send(Ok(b)).is_err() {
                                return;
                            }
                        }
                        Ok(None) => return,
                        Err(e) => {
                            let _ = tx.send(Err(e));
                            return;
                        }
                    }
                }
            })
            .expect("spawning a thread");
        self.worker = Some(Worker { batches: rx, stop, thread: Some(thread) });
    }

    /// The next batch of this epoch, or `None` at its end.
    pub fn next_batch(&mut self) -> Result<Option<Batch>> {
        let Some(worker) = &self.worker else { return Ok(None) };
        match worker.batches.recv() {
            Ok(Ok(b)) => Ok(Some(b)),
            Ok(Err(e)) => {
                self.worker = None;
                Err(e)
            }
            // the producer finished the epoch
            Err(_) => {
                self.worker = None;
                Ok(None)
            }
        }
    }

    /// Starts the next epoch (reshuffled when `shuffle`).
    pub fn reset(&mut self) {
        let (n, batch) = (self.offsets.len(), self.config.batch_size);
        let pad = (batch - (n - self.start) % batch) % batch;
        self.start = if self.config.round_batch { pad % n } else { 0 };
        self.epoch += 1;
        self.spawn_epoch();
    }
}

/// A record read for a batch: its position in the epoch's order, and its bytes.
type Record = (usize, Vec<u8>);

/// Makes the batches of one epoch.
struct Producer<'a> {
    config: &'a ImageRecordConfig,
    labels: Option<&'a ImageList>,
    reader: RecordReader,
    order: Vec<u64>,
    /// Position in `order` of the next record.
    next: usize,
    epoch: u64,
}

impl<'a> Producer<'a> {
    fn new(
        config: &'a ImageRecordConfig,
        labels: Option<&'a ImageList>,
        offsets: &[u64],
        epoch: u64,
        start: usize,
    ) -> Result<Producer<'a>> {
        let mut order = offsets.to_vec();
        if config.shuffle {
            let mut rng = Pcg64::seed_from_u64(config.seed ^ epoch.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            for i in (1..order.len()).rev() {
                order.swap(i, rng.random_range(0..=i));
            }
        }
        Ok(Producer {
            config,
            labels,
            reader: RecordReader::open(&config.path_imgrec)?,
            order,
            next: start,
            epoch,
        })
    }

    /// Reads the next batch's records: (position in the epoch, bytes).
    fn records(&mut self) -> Result<(Vec<Record>, usize)> {
        let n = self.config.batch_size;
        let mut out = Vec::with_capacity(n);
        let mut pad = 0;
        while out.len() < n {
            let position = if self.next < self.order.len() {
                self.next
            } else if self.config.round_batch && !out.is_empty() {
                pad += 1;
                (self.next - self.order.len()) % self.order.len()
            } else {
                break;
            };
            self.next += 1;
            self.reader.seek(self.order[position])?;
            let record = self.reader.read()?.ok_or_else(|| {
                Error::Invalid(format!(
                    "ImageRecordIter: `{}` ends where its record at offset {} should be",
                    self.config.path_imgrec.display(),
                    self.order[position]
                ))
            })?;
            out.push((position, record));
        }
        if !self.config.round_batch {
            pad = n - out.len();
        }
        Ok((out, pad))
    }

    fn batch(&mut self) -> Result<Option<Batch>> {
        if self.next >= self.order.len() {
            return Ok(None);
        }
        let (records, pad) = self.records()?;
        let config = self.config;
        let [c, h, w] = config.data_shape;
        let per_image = c * h * w;
        let mut data = vec![0f32; config.batch_size * per_image];
        let mut label = vec![0f32; config.batch_size * config.label_width];
        let threads = config.threads.clamp(1, records.len().max(1));
        let chunk = records.len().div_ceil(threads);
        let (epoch, list) = (self.epoch, self.labels);
        let results: Vec<Result<()>> = std::thread::scope(|scope| {
            let handles: Vec<_> = records
                .chunks(chunk)
                .zip(data.chunks_mut(chunk * per_image))
                .zip(label.chunks_mut(chunk * config.label_width))
                .map(|((recs, out), labels)| {
                    scope.spawn(move || -> Result<()> {
                        for (k, (position, record)) in recs.iter().enumerate() {
                            let mut rng = Pcg64::seed_from_u64(
                                config.seed
                                    ^ (epoch << 40)
                                    ^ (*position as u64).wrapping_mul(0x2545_f491_4f6c_dd1d),
                            );
                            let img_label = prepare(
                                config,
                                list,
                                record,
                                &mut rng,
                                &mut out[k * per_image..(k + 1) * per_image],
                            )
                            .map_err(|e| {
                                Error::Invalid(format!(
                                    "ImageRecordIter: `{}`, record {position}: {e}",
                                    config.path_imgrec.display()
                                ))
                            })?;
                            let lw = config.label_width;
                            labels[k * lw..(k + 1) * lw].copy_from_slice(&img_label);
                        }
                        Ok(())
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err(Error::Panic("an image worker".into()))))
                .collect()
        });
        results.into_iter().collect::<Result<Vec<()>>>()?;
        Ok(Some(Batch { data, label, pad }))
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
    const HEADER: usize = 24;
    if record.len() < HEADER {
        return Err(Error::Invalid(format!("a record of {} bytes is shorter than its header", record.len())));
    }
    let flag = u32::from_le_bytes(record[..4].try_into().expect("4 bytes")) as usize;
    let mut labels = vec![f32::from_le_bytes(record[4..8].try_into().expect("4 bytes"))];
    let image_index = u64::from_le_bytes(record[8..16].try_into().expect("8 bytes"));
    let mut payload = &record[HEADER..];
    if flag > 0 {
        if payload.len() < flag * 4 {
            return Err(Error::Invalid(format!(
                "the header says {flag} labels follow, but the record is shorter"
            )));
        }
        labels = payload[..flag * 4]
            .chunks(4)
            .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
            .collect();
        payload = &payload[flag * 4..];
    }
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
    let mut it = ImageRecordIter::new(config)?;
    let [c, h, w] = it.config.data_shape;
    let per_image = c * h * w;
    let mut sum = vec![0f32; per_image];
    let mut count = 0usize;
    while let Some(batch) = it.next_batch()? {
        let filled = it.config.batch_size - batch.pad;
        for img in batch.data.chunks(per_image).take(filled) {
            sum.iter_mut().zip(img).for_each(|(s, v)| *s += v);
        }
        count += filled;
    }
    let inv = 1.0 / count.max(1) as f32;
    Ok(sum.into_iter().map(|s| s * inv).collect())
}
