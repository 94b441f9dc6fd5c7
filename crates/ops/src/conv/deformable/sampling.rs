//! The deformable im2col of `_contrib_DeformableConvolution` and its two
//! adjoints, over one image.
//!
//! Tap `(i, j)` of output position `(ho, wo)` in deformable group `g`
//! reads every channel of the group bilinearly at
//! `(ho·stride_h - pad_h + i·dilate_h + Δh, wo·stride_w - pad_w + j·dilate_w + Δw)`,
//! the offsets `Δh` and `Δw` being channels `2·(i·kw + j)` and
//! `2·(i·kw + j) + 1` of the group's block of `2·kh·kw` offset channels.
//! The read follows MXNet 1.9.1's CPU kernel (`im2col_bilinear_cpu`): a
//! point outside `[0, H) x [0, W)` reads 0; inside, the four pixels around
//! it are blended, and a point in the last row (`h >= H - 1`) or column
//! reads that row or column alone (its fractional part is dropped).
//!
//! A sample's place and blend weights depend only on the offsets, so they
//! are computed once per (group, tap, position) as a [`Sample`] and shared
//! by the group's channels: [`im2col`] reads with them, [`col2im_add`]
//! scatters the column gradient back with the same weights, and
//! [`offset_grad`] takes the derivative of the blend along each axis.

use num_traits::Float;
use oxnet_core::FloatElement;

use super::super::geometry::Geom3;
use super::shared::{cast, sample_points};

/// Where one tap of one output position reads in a channel plane, in the
/// compute type `C`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sample<C> {
    /// Index of the top-left pixel `(floor(h), floor(w))` in the plane.
    at: usize,
    /// Distance to the pixel below: the width, or 0 in the last row.
    down: usize,
    /// Distance to the pixel on the right: 1, or 0 in the last column.
    right: usize,
    /// Fractional part of `h` (0 in the last row).
    fh: C,
    /// Fractional part of `w` (0 in the last column).
    fw: C,
}

impl<C: Float> Sample<C> {
    /// The sample at `(h, w)` in an `height x width` plane, or `None` when
    /// the point lies outside `[0, height) x [0, width)` (or is NaN).
    fn new(h: C, w: C, height: usize, width: usize) -> Option<Self> {
        let inside = h >= C::zero() && w >= C::zero() && h < cast(height) && w < cast(width);
        if !inside {
            return None;
        }
        let (h0, w0) = (h.floor(), w.floor());
        let (row, col) = (h0.to_usize()?, w0.to_usize()?);
        let (down, fh) = if row + 1 >= height { (0, C::zero()) } else { (width, h - h0) };
        let (right, fw) = if col + 1 >= width { (0, C::zero()) } else { (1, w - w0) };
        Some(Sample { at: row * width + col, down, right, fh, fw })
    }

    /// The four pixels: top-left, top-right, bottom-left, bottom-right.
    fn corners(&self) -> [usize; 4] {
        let low = self.at + self.down;
        [self.at, self.at + self.right, low, low + self.right]
    }

    /// The blend weights of [`Sample::corners`].
    fn weights(&self) -> [C; 4] {
        let (gh, gw) = (C::one() - self.fh, C::one() - self.fw);
        [gh * gw, gh * self.fw, self.fh * gw, self.fh * self.fw]
    }

    /// The four pixel values of `plane` in the compute type.
    fn values<T: FloatElement<Compute = C>>(&self, plane: &[T]) -> [C; 4] {
        self.corners().map(|k| plane[k].to_compute())
    }

    /// The blended value of `plane` at the sample.
    fn read<T: FloatElement<Compute = C>>(&self, plane: &[T]) -> C {
        let v = self.values(plane);
        self.weights().iter().zip(v).fold(C::zero(), |s, (&w, x)| s + w * x)
    }

    /// The derivatives of [`Sample::read`] with respect to `h` and `w`
    /// (0 along an axis whose last row or column the sample reads alone).
    fn slopes<T: FloatElement<Compute = C>>(&self, plane: &[T]) -> (C, C) {
        let [tl, tr, bl, br] = self.values(plane);
        let one = C::one();
        let dh = if self.down == 0 { C::zero() } else { (one - self.fw) * (bl - tl) + self.fw * (br - tr) };
        let dw = if self.right == 0 { C::zero() } else { (one - self.fh) * (tr - tl) + self.fh * (br - bl) };
        (dh, dw)
    }
}

/// The samples of one image, ordered (deformable group, tap, output
/// position), from its offsets (see [`sample_points`]).
pub(super) fn samples<T: FloatElement>(g: &Geom3, offsets: &[T]) -> Vec<Option<Sample<T::Compute>>> {
    sample_points(g, offsets, Sample::new)
}

/// The sizes the column kernels share: channels per deformable group,
/// taps, output positions and the plane size.
#[derive(Debug, Clone, Copy)]
pub(super) struct Cols {
    /// Channels per deformable group.
    pub per_group: usize,
    /// Kernel taps (`kh·kw`).
    pub taps: usize,
    /// Output positions (`Ho·Wo`).
    pub pos: usize,
    /// Pixels of an input plane (`H·W`).
    pub plane: usize,
}

impl Cols {
    /// The samples of channel `ch`'s deformable group (`taps·pos`).
    fn group_samples<'a, C>(&self, samples: &'a [Option<Sample<C>>], ch: usize) -> &'a [Option<Sample<C>>] {
        let n = self.taps * self.pos;
        &samples[ch / self.per_group * n..][..n]
    }
}

/// The columns of one image: row `ch·taps + tap` holds channel `ch` read
/// at every output position through `samples` (`col` is
/// `channels·taps x pos`). Channels run in parallel.
pub(super) fn im2col<T: FloatElement>(
    x: &[T],
    s: &Cols,
    samples: &[Option<Sample<T::Compute>>],
    col: &mut [T],
) {
    if col.is_empty() || s.plane == 0 {
        return;
    }
    oxnet_core::parallel::for_each_chunk_mut(col, s.taps * s.pos, |ch, rows| {
        let plane = &x[ch * s.plane..][..s.plane];
        for (v, smp) in rows.iter_mut().zip(s.group_samples(samples, ch)) {
            *v = smp.map_or(T::zero(), |smp| T::from_compute(smp.read(plane)));
        }
    });
}

/// Adds the column gradient `dcol` (laid out as [`im2col`]'s columns) back
/// onto the pixels each sample blended, with the blend weights: the data
/// gradient of one image, `dx` in the compute type. Channels run in
/// parallel.
pub(super) fn col2im_add<T: FloatElement>(
    dcol: &[T],
    s: &Cols,
    samples: &[Option<Sample<T::Compute>>],
    dx: &mut [T::Compute],
) {
    if dx.is_empty() || s.taps * s.pos == 0 {
        return;
    }
    oxnet_core::parallel::for_each_chunk_mut(dx, s.plane, |ch, plane| {
        let rows = &dcol[ch * s.taps * s.pos..][..s.taps * s.pos];
        for (g, smp) in rows.iter().zip(s.group_samples(samples, ch)) {
            if let Some(smp) = smp {
                let g = g.to_compute();
                for (k, w) in smp.corners().into_iter().zip(smp.weights()) {
                    plane[k] = plane[k] + w * g;
                }
            }
        }
    });
}

/// The offset gradient of one image (`doff` laid out as the offsets): for
/// every (deformable group, tap, position), the slopes of the blend along
/// h and w on each of the group's channels of `x`, times that channel's
/// column gradient, summed over the channels. Taps run in parallel.
pub(super) fn offset_grad<T: FloatElement>(
    x: &[T],
    dcol: &[T],
    s: &Cols,
    samples: &[Option<Sample<T::Compute>>],
    doff: &mut [T],
) {
    if doff.is_empty() || s.plane == 0 {
        return;
    }
    let zero = <T::Compute as num_traits::Zero>::zero();
    oxnet_core::parallel::for_each_chunk_mut(doff, 2 * s.pos, |k, out| {
        let (group, tap) = (k / s.taps, k % s.taps);
        let smp = &samples[k * s.pos..][..s.pos];
        let mut acc = vec![(zero, zero); s.pos];
        for ch in group * s.per_group..(group + 1) * s.per_group {
            let plane = &x[ch * s.plane..][..s.plane];
            let grad = &dcol[(ch * s.taps + tap) * s.pos..][..s.pos];
            for ((a, g), smp) in acc.iter_mut().zip(grad).zip(smp) {
                if let Some(smp) = smp {
                    let (dh, dw) = smp.slopes(plane);
                    let g = g.to_compute();
                    *a = (a.0 + dh * g, a.1 + dw * g);
                }
            }
        }
        let (oh, ow) = out.split_at_mut(s.pos);
        for ((h, w), a) in oh.iter_mut().zip(ow.iter_mut()).zip(acc) {
            *h = T::from_compute(a.0);
            *w = T::from_compute(a.1);
        }
    });
}
