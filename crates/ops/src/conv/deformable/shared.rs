//! What the deformable and the modulated deformable convolutions share
//! around their own bilinear reads: where each tap of each output position
//! points ([`sample_points`]), and the grouped products of one image's
//! columns ([`Groups`]).

use super::super::geometry::Geom3;
use crate::kernels::matmul::{self, MatmulScalar};
use num_traits::{Float, NumCast};
use oxnet_core::{Error, FloatElement, Result};

/// `v` in the float type `C`.
pub(in crate::conv) fn cast<C: Float, V: num_traits::ToPrimitive>(v: V) -> C {
    <C as NumCast>::from(v).expect("a float holds every integer up to rounding")
}

/// The samples of one image, ordered (deformable group, tap, output
/// position), from its offsets (`groups·2·taps` planes of the output's
/// extents): `sample(h, w, height, width)` at each tap's point (the
/// regular grid's plus the offsets). `g` holds the geometry on axes 1
/// (height) and 2 (width).
pub(in crate::conv) fn sample_points<T: FloatElement, S>(
    g: &Geom3,
    offsets: &[T],
    sample: impl Fn(T::Compute, T::Compute, usize, usize) -> Option<S>,
) -> Vec<Option<S>> {
    let pos = g.out_size();
    let (taps, kw, wo) = (g.k[1] * g.k[2], g.k[2], g.out[2]);
    let mut out = Vec::with_capacity(offsets.len() / 2);
    if pos == 0 {
        return out;
    }
    for (k, block) in offsets.chunks_exact(2 * pos).enumerate() {
        let tap = k % taps;
        let (i, j) = (tap / kw, tap % kw);
        let (dh, dw) = block.split_at(pos);
        for (p, (dh, dw)) in dh.iter().zip(dw).enumerate() {
            let h = cast::<T::Compute, _>(g.coord(1, p / wo, i)) + dh.to_compute();
            let w = cast::<T::Compute, _>(g.coord(2, p % wo, j)) + dw.to_compute();
            out.push(sample(h, w, g.inp[1], g.inp[2]));
        }
    }
    out
}

/// The channel groups' products of one image: `count` groups of `filters`
/// filters, each over `rows` column rows (`channels/count · taps`) and
/// `pos` output positions; errors name the operator `op`.
#[derive(Debug, Clone, Copy)]
pub(in crate::conv) struct Groups {
    pub op: &'static str,
    pub count: usize,
    pub filters: usize,
    pub rows: usize,
    pub pos: usize,
}

impl Groups {
    fn gemm_err(&self, e: matmul::MatmulError) -> Error {
        Error::Shape(format!("{}: {e}", self.op))
    }

    /// One image's output `y` = weight · columns per group (added to `y`
    /// with `add`), plus `bias` per filter when given.
    pub fn forward<T: FloatElement + MatmulScalar>(
        &self,
        w: &[T],
        col: &[T],
        y: &mut [T],
        add: bool,
        bias: Option<&[T]>,
    ) -> Result<()> {
        let (fg, rows, pos) = (self.filters, self.rows, self.pos);
        for grp in 0..self.count {
            let wg = &w[grp * fg * rows..][..fg * rows];
            let cg = &col[grp * rows * pos..][..rows * pos];
            let yg = &mut y[grp * fg * pos..][..fg * pos];
            matmul::matmul(wg, cg, yg, fg, rows, pos, false, false, add).map_err(|e| self.gemm_err(e))?;
        }
        if let Some(b) = bias {
            // output channel f fills positions f·pos..(f + 1)·pos
            for (k, v) in y.iter_mut().enumerate() {
                *v = T::from_compute(v.to_compute() + b[k / pos].to_compute());
            }
        }
        Ok(())
    }

    /// One image's column gradient into `col`: weightᵀ · out_grad per group.
    pub fn column_grad<T: FloatElement + MatmulScalar>(
        &self,
        w: &[T],
        dy: &[T],
        col: &mut [T],
    ) -> Result<()> {
        let (fg, rows, pos) = (self.filters, self.rows, self.pos);
        for grp in 0..self.count {
            let wg = &w[grp * fg * rows..][..fg * rows];
            let dyg = &dy[grp * fg * pos..][..fg * pos];
            let cg = &mut col[grp * rows * pos..][..rows * pos];
            matmul::matmul(wg, dyg, cg, rows, fg, pos, true, false, false).map_err(|e| self.gemm_err(e))?;
        }
        Ok(())
    }

    /// One image's weight gradient, out_grad · columnsᵀ per group, written
    /// into `dw` or (with `add`) added to it.
    pub fn weight_grad<T: FloatElement + MatmulScalar>(
        &self,
        dy: &[T],
        col: &[T],
        dw: &mut [T],
        add: bool,
    ) -> Result<()> {
        let (fg, rows, pos) = (self.filters, self.rows, self.pos);
        for grp in 0..self.count {
            let dyg = &dy[grp * fg * pos..][..fg * pos];
            let cg = &col[grp * rows * pos..][..rows * pos];
            let dwg = &mut dw[grp * fg * rows..][..fg * rows];
            matmul::matmul(dyg, cg, dwg, fg, pos, rows, false, true, add).map_err(|e| self.gemm_err(e))?;
        }
        Ok(())
    }
}
