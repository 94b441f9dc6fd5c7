//! The threaded machinery shared by the RecordIO image iterators
//! (`ImageRecordIter`, `ImageDetRecordIter`): this part's records found
//! once, then per epoch a producer thread that reads each batch's records
//! in order (or in a seeded shuffled order), prepares them in parallel on
//! `threads` threads with a [`Prepare`] and hands finished batches over a
//! bounded queue (`prefetch` batches ahead).
//!
//! Each record's random draws come from a generator seeded by the seed,
//! the epoch and the record's position in the epoch, so a run is the same
//! for any number of threads. With `round_batch` the last batch of an
//! epoch is filled from the start and the next epoch starts after the
//! records used as padding, as MXNet's batch loader does.

use crate::recordio::RecordReader;
use oxnet_core::{Error, Result};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;

/// How one record becomes one item of a batch.
pub trait Prepare: Send + Sync + 'static {
    /// The iterator's name, for error messages.
    fn name(&self) -> &'static str;
    /// Values of data per item.
    fn data_len(&self) -> usize;
    /// Values of label per item.
    fn label_len(&self) -> usize;
    /// Prepares `record` (a whole image record, header included) into
    /// `data` and `label`, both zeroed, drawing from `rng`.
    fn prepare(&self, record: &[u8], rng: &mut Pcg64, data: &mut [f32], label: &mut [f32]) -> Result<()>;
}

/// What the pipeline reads and how it batches.
#[derive(Clone, Debug)]
pub struct PipelineSettings {
    /// The `.rec` file.
    pub path_imgrec: PathBuf,
    /// Items per batch.
    pub batch_size: usize,
    /// Shuffles the records of this part at each epoch.
    pub shuffle: bool,
    /// The seed of the shuffles and of each record's generator.
    pub seed: u64,
    /// Threads preparing records.
    pub threads: usize,
    /// Batches prepared ahead.
    pub prefetch: usize,
    /// Fills the last batch from the start (else zeros) and starts the
    /// next epoch after the records used as padding.
    pub round_batch: bool,
    /// This reader's part (of `num_parts`).
    pub part_index: usize,
    /// The number of parts the file is split into.
    pub num_parts: usize,
}

/// One batch: `data` (batch, data_len) and `label` (batch, label_len),
/// row-major; the last `pad` items repeat the epoch's first ones (or are
/// zeros without `round_batch`).
#[derive(Debug)]
pub struct Batch {
    /// The data of every item.
    pub data: Vec<f32>,
    /// The labels of every item.
    pub label: Vec<f32>,
    /// How many items at the end are padding.
    pub pad: usize,
}

/// The record offsets of part `part_index` of `num_parts` of the file:
/// parts split the file by bytes at record starts, as dmlc-core's input
/// splits do. An error names the iterator when the part is empty.
pub fn part_offsets(name: &str, settings: &PipelineSettings) -> Result<Vec<u64>> {
    let mut reader = RecordReader::open(&settings.path_imgrec)?;
    let all = reader.offsets()?;
    let size = reader.size();
    let (part, parts) = (settings.part_index as u64, settings.num_parts as u64);
    let (from, to) = (size * part / parts, size * (part + 1) / parts);
    let offsets: Vec<u64> = all.into_iter().filter(|&o| o >= from && o < to).collect();
    if offsets.is_empty() {
        return Err(Error::Invalid(format!(
            "{name}: `{}` holds no records for part {} of {}",
            settings.path_imgrec.display(),
            settings.part_index,
            settings.num_parts
        )));
    }
    Ok(offsets)
}

/// A running pipeline: [`next_batch`](Self::next_batch) for batches,
/// [`reset`](Self::reset) for the next epoch.
pub struct RecordPipeline<P: Prepare> {
    settings: Arc<PipelineSettings>,
    prep: Arc<P>,
    offsets: Arc<Vec<u64>>,
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

impl<P: Prepare> RecordPipeline<P> {
    /// Starts the first epoch over `offsets` (this part's records, non-empty).
    pub fn new(settings: PipelineSettings, prep: P, offsets: Vec<u64>) -> RecordPipeline<P> {
        let mut it = RecordPipeline {
            settings: Arc::new(settings),
            prep: Arc::new(prep),
            offsets: Arc::new(offsets),
            epoch: 0,
            start: 0,
            worker: None,
        };
        it.spawn_epoch();
        it
    }

    /// The settings it runs with.
    pub fn settings(&self) -> &PipelineSettings {
        &self.settings
    }

    /// The record preparation it runs with.
    pub fn prep(&self) -> &P {
        &self.prep
    }

    /// The number of records this reader serves per epoch.
    pub fn num_records(&self) -> usize {
        self.offsets.len()
    }

    fn spawn_epoch(&mut self) {
        self.worker = None;
        let (tx, rx) = sync_channel(self.settings.prefetch.max(1));
        let stop = Arc::new(AtomicBool::new(false));
        let (epoch, start) = (self.epoch, self.start);
        let (settings, prep, offsets, flag) =
            (self.settings.clone(), self.prep.clone(), self.offsets.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("oxnet-record-pipeline".into())
            .spawn(move || {
                let mut producer = match Producer::new(&settings, &*prep, &offsets, epoch, start) {
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

    /// The mean item of the rest of this epoch, each value averaged over
    /// the records (padding left out): MXNet's mean image when its file is
    /// missing, summed in `f32` in order and multiplied by `1 / count` as
    /// its normalisers do. Run it on a pipeline without shuffling.
    pub fn mean_item(&mut self) -> Result<Vec<f32>> {
        let (per_item, batch) = (self.prep.data_len(), self.settings.batch_size);
        let mut sum = vec![0f32; per_item];
        let mut count = 0usize;
        while let Some(b) = self.next_batch()? {
            let filled = batch - b.pad;
            for item in b.data.chunks(per_item).take(filled) {
                sum.iter_mut().zip(item).for_each(|(s, v)| *s += v);
            }
            count += filled;
        }
        let inv = 1.0 / count.max(1) as f32;
        Ok(sum.into_iter().map(|s| s * inv).collect())
    }

    /// Starts the next epoch (reshuffled when `shuffle`).
    pub fn reset(&mut self) {
        let (n, batch) = (self.offsets.len(), self.settings.batch_size);
        let pad = (batch - (n - self.start) % batch) % batch;
        self.start = if self.settings.round_batch { pad % n } else { 0 };
        self.epoch += 1;
        self.spawn_epoch();
    }
}

/// A record read for a batch: its position in the epoch's order, and its bytes.
type Record = (usize, Vec<u8>);

/// Makes the batches of one epoch.
struct Producer<'a, P: Prepare> {
    settings: &'a PipelineSettings,
    prep: &'a P,
    reader: RecordReader,
    order: Vec<u64>,
    /// Position in `order` of the next record.
    next: usize,
    epoch: u64,
}

impl<'a, P: Prepare> Producer<'a, P> {
    fn new(
        settings: &'a PipelineSettings,
        prep: &'a P,
        offsets: &[u64],
        epoch: u64,
        start: usize,
    ) -> Result<Producer<'a, P>> {
        let mut order = offsets.to_vec();
        if settings.shuffle {
            let mut rng = Pcg64::seed_from_u64(settings.seed ^ epoch.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            for i in (1..order.len()).rev() {
                order.swap(i, rng.random_range(0..=i));
            }
        }
        Ok(Producer {
            settings,
            prep,
            reader: RecordReader::open(&settings.path_imgrec)?,
            order,
            next: start,
            epoch,
        })
    }

    /// Reads the next batch's records: (position in the epoch, bytes).
    fn records(&mut self) -> Result<(Vec<Record>, usize)> {
        let n = self.settings.batch_size;
        let mut out = Vec::with_capacity(n);
        let mut pad = 0;
        while out.len() < n {
            let position = if self.next < self.order.len() {
                self.next
            } else if self.settings.round_batch && !out.is_empty() {
                pad += 1;
                (self.next - self.order.len()) % self.order.len()
            } else {
                break;
            };
            self.next += 1;
            self.reader.seek(self.order[position])?;
            let record = self.reader.read()?.ok_or_else(|| {
                Error::Invalid(format!(
                    "{}: `{}` ends where its record at offset {} should be",
                    self.prep.name(),
                    self.settings.path_imgrec.display(),
                    self.order[position]
                ))
            })?;
            out.push((position, record));
        }
        if !self.settings.round_batch {
            pad = n - out.len();
        }
        Ok((out, pad))
    }

    fn batch(&mut self) -> Result<Option<Batch>> {
        if self.next >= self.order.len() {
            return Ok(None);
        }
        let (records, pad) = self.records()?;
        let (settings, prep, epoch) = (self.settings, self.prep, self.epoch);
        let (dl, ll) = (prep.data_len(), prep.label_len());
        assert!(dl > 0 && ll > 0, "{}: items without data or label", prep.name());
        let mut data = vec![0f32; settings.batch_size * dl];
        let mut label = vec![0f32; settings.batch_size * ll];
        let threads = settings.threads.clamp(1, records.len().max(1));
        let chunk = records.len().div_ceil(threads);
        let results: Vec<Result<()>> = std::thread::scope(|scope| {
            let handles: Vec<_> = records
                .chunks(chunk)
                .zip(data.chunks_mut(chunk * dl))
                .zip(label.chunks_mut(chunk * ll))
                .map(|((recs, out), labels)| {
                    scope.spawn(move || -> Result<()> {
                        for (k, (position, record)) in recs.iter().enumerate() {
                            let mut rng = Pcg64::seed_from_u64(
                                settings.seed
                                    ^ (epoch << 40)
                                    ^ (*position as u64).wrapping_mul(0x2545_f491_4f6c_dd1d),
                            );
                            prep.prepare(
                                record,
                                &mut rng,
                                &mut out[k * dl..(k + 1) * dl],
                                &mut labels[k * ll..(k + 1) * ll],
                            )
                            .map_err(|e| {
                                Error::Invalid(format!(
                                    "{}: `{}`, record {position}: {e}",
                                    prep.name(),
                                    settings.path_imgrec.display()
                                ))
                            })?;
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

/// A record's header: its label values (the label array when the flag
/// says one follows, else the header's single label), its image index,
/// and the payload after them.
pub fn split_record(record: &[u8]) -> Result<(Vec<f32>, u64, &[u8])> {
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
    Ok((labels, image_index, payload))
}
