//! The UCI 8×8 handwritten digits (1,797 images, scikit-learn's copy,
//! `data/digits.csv.gz`; see `data/README.md`), read from the copy built
//! into this crate, and a deterministic train/held-out split.

use anyhow::{bail, ensure, Context, Result};
use flate2::read::GzDecoder;
use std::io::Read;

/// The compressed file, built into the tour so it runs from anywhere.
const DIGITS_GZ: &[u8] = include_bytes!("../../../data/digits.csv.gz");

/// Pixels per image (8×8).
pub const PIXELS: usize = 64;
/// Number of classes.
pub const CLASSES: usize = 10;

/// Images (pixels scaled to [0, 1], `PIXELS` per image) and their labels.
#[derive(Debug, Clone, Default)]
pub struct Digits {
    /// Row-major pixels, `len() * PIXELS` values.
    pub pixels: Vec<f32>,
    /// One label (0..9) per image.
    pub labels: Vec<u8>,
}

impl Digits {
    /// The number of images.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// True without images.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// The images at `indices`, in that order.
    pub fn select(&self, indices: &[usize]) -> Digits {
        let mut out = Digits::default();
        for &i in indices {
            out.pixels.extend_from_slice(&self.pixels[i * PIXELS..(i + 1) * PIXELS]);
            out.labels.push(self.labels[i]);
        }
        out
    }
}

/// The whole data set.
pub fn load() -> Result<Digits> {
    let mut text = String::new();
    GzDecoder::new(DIGITS_GZ).read_to_string(&mut text).context("decompressing data/digits.csv.gz")?;
    parse(&text)
}

/// Parses the CSV: 64 pixels (0..16) then the label (0..9) per line.
pub fn parse(text: &str) -> Result<Digits> {
    let mut out = Digits::default();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let values: Vec<u32> = line
            .split(',')
            .map(|v| v.trim().parse::<u32>())
            .collect::<std::result::Result<_, _>>()
            .with_context(|| format!("digits line {}: not a list of integers", n + 1))?;
        if values.len() != PIXELS + 1 {
            bail!("digits line {}: {} values, expected {}", n + 1, values.len(), PIXELS + 1);
        }
        let label = values[PIXELS];
        ensure!(label < CLASSES as u32, "digits line {}: label {label} is not a digit", n + 1);
        ensure!(values[..PIXELS].iter().all(|&v| v <= 16), "digits line {}: a pixel is above 16", n + 1);
        out.pixels.extend(values[..PIXELS].iter().map(|&v| v as f32 / 16.0));
        out.labels.push(label as u8);
    }
    Ok(out)
}

/// A small deterministic generator (SplitMix64), so the split and the
/// batch order do not depend on anything else.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Shuffles `v` in place (Fisher–Yates).
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = (self.next_u64() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
    }
}

/// Splits `data` into a training part and a held-out part of
/// `held_out_fraction`, after a shuffle seeded by `seed`.
pub fn split(data: &Digits, held_out_fraction: f64, seed: u64) -> (Digits, Digits) {
    let mut order: Vec<usize> = (0..data.len()).collect();
    Rng::new(seed).shuffle(&mut order);
    let n_held = (data.len() as f64 * held_out_fraction).round() as usize;
    let (held, train) = order.split_at(n_held);
    (data.select(train), data.select(held))
}
