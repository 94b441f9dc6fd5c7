//! The forward products: one strided GEMM per attention batch (one head of
//! one sequence), reading each head's chunk straight out of the interleaved
//! projections and writing straight into the output's layout, with no
//! rearranging copies.

use super::dims::{Dims, Kind};
use crate::kernels::matmul::{self, CpuGemm, MatMut, MatRef, MatmulError, MatmulScalar};
use oxnet_core::{Element, Error, Result};

/// Where the per-head matrices of one operand lie in its buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Layout {
    /// A sequence-major projection `(len, batch, heads·parts·head_dim)`:
    /// attention batch `i = b·heads + h` is the `len x head_dim` matrix of
    /// chunk `part` of head `h` of sequence `b`.
    Projection {
        /// Sequence length (the matrix rows).
        len: usize,
        /// Chunks per head.
        parts: usize,
        /// The chunk this operand reads.
        part: usize,
    },
    /// Batch-major matrices `(batch·heads, rows, cols)` stored one after
    /// another.
    Stacked {
        /// Rows of each matrix.
        rows: usize,
        /// Columns of each matrix.
        cols: usize,
    },
}

/// Placement of one matrix: `(offset, rows, cols, row_stride, col_stride)`.
type Placement = (usize, usize, usize, isize, isize);

impl Layout {
    /// Where matrix `i` of `batches` lies, for heads of `head_dim` features.
    fn matrix(self, i: usize, batches: usize, head_dim: usize) -> Result<Placement> {
        let stride = |x: usize| isize::try_from(x).map_err(|_| gemm_err(MatmulError::Overflow));
        Ok(match self {
            Layout::Projection { len, parts, part } => {
                let row = batches * parts * head_dim;
                ((i * parts + part) * head_dim, len, head_dim, stride(row)?, 1)
            }
            Layout::Stacked { rows, cols } => (i * rows * cols, rows, cols, stride(cols)?, 1),
        })
    }

    /// A read view of matrix `i`, transposed when `trans`.
    fn view<'a, T>(self, data: &'a [T], i: usize, d: &Dims, trans: bool) -> Result<MatRef<'a, T>> {
        let (off, rows, cols, rs, cs) = self.matrix(i, d.attention_batches(), d.head_dim)?;
        let m = MatRef::new(data, off, rows, cols, rs, cs).map_err(gemm_err)?;
        Ok(if trans { m.t() } else { m })
    }
}

/// A batched product `out_i = alpha · op(a_i) · op(b_i)` over every
/// attention batch `i`, `a` and `b` being inputs `operands.0` and
/// `operands.1` of the call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Product {
    /// Which inputs are the left and right factors.
    pub operands: (usize, usize),
    /// Layout of the left factor.
    pub a: Layout,
    /// Use the left factor's matrices transposed.
    pub trans_a: bool,
    /// Layout of the right factor.
    pub b: Layout,
    /// Use the right factor's matrices transposed.
    pub trans_b: bool,
    /// Layout of the output.
    pub out: Layout,
    /// The factor applied to every product.
    pub alpha: f64,
}

impl Product {
    /// The product that operator `kind` computes for sizes `d`.
    pub fn of(kind: Kind, d: &Dims) -> Product {
        let (q, kv) = (d.q_len, d.kv_len);
        let proj = |len, parts, part| Layout::Projection { len, parts, part };
        let scores = Layout::Stacked { rows: q, cols: kv };
        match kind {
            // scores = (q / sqrt(head_dim)) · kᵀ
            Kind::SelfAttQk => Product {
                operands: (0, 0),
                a: proj(q, 3, 0),
                trans_a: false,
                b: proj(q, 3, 1),
                trans_b: true,
                out: scores,
                alpha: d.scale(),
            },
            Kind::EncDecQk => Product {
                operands: (0, 1),
                a: proj(q, 1, 0),
                trans_a: false,
                b: proj(kv, 2, 0),
                trans_b: true,
                out: scores,
                alpha: d.scale(),
            },
            // values = attention · v
            Kind::SelfAttValAtt => Product {
                operands: (1, 0),
                a: scores,
                trans_a: false,
                b: proj(q, 3, 2),
                trans_b: false,
                out: proj(q, 1, 0),
                alpha: 1.0,
            },
            Kind::EncDecValAtt => Product {
                operands: (1, 0),
                a: scores,
                trans_a: false,
                b: proj(kv, 2, 1),
                trans_b: false,
                out: proj(q, 1, 0),
                alpha: 1.0,
            },
        }
    }

    /// Runs the product on contiguous buffers; `accumulate` adds into
    /// `out` instead of overwriting it.
    ///
    /// When the output is stacked and each product is too small to thread
    /// on its own, the attention batches are spread over the thread pool;
    /// otherwise they run in turn, each product threaded when large enough.
    pub fn run<T: MatmulScalar + Element>(
        &self,
        d: &Dims,
        a: &[T],
        b: &[T],
        out: &mut [T],
        accumulate: bool,
    ) -> Result<()> {
        let batches = d.attention_batches();
        if out.is_empty() {
            return Ok(());
        }
        let alpha = T::from_f64(self.alpha);
        let factors = |i: usize| -> Result<(MatRef<'_, T>, MatRef<'_, T>)> {
            Ok((self.a.view(a, i, d, self.trans_a)?, self.b.view(b, i, d, self.trans_b)?))
        };
        if let Layout::Stacked { rows, cols } = self.out {
            let (first_a, _) = factors(0)?;
            if spread_over_batches(batches, rows * cols * first_a.cols()) {
                let step = rows * cols;
                let per_task = batches.div_ceil(oxnet_core::parallel::num_threads() * 4);
                let backend = CpuGemm::single_threaded();
                return oxnet_core::parallel::try_for_each_chunk_mut(out, step * per_task, |t, outs| {
                    outs.chunks_mut(step).enumerate().try_for_each(|(j, o)| {
                        let (fa, fb) = factors(t * per_task + j)?;
                        let dst = MatMut::row_major(o, rows, cols).map_err(gemm_err)?;
                        matmul::gemm_strided_with(&backend, dst, fa, fb, alpha, accumulate).map_err(gemm_err)
                    })
                });
            }
        }
        for i in 0..batches {
            let (fa, fb) = factors(i)?;
            let (off, rows, cols, rs, cs) = self.out.matrix(i, batches, d.head_dim)?;
            let dst = MatMut::new(out, off, rows, cols, rs, cs).map_err(gemm_err)?;
            matmul::gemm_strided(dst, fa, fb, alpha, accumulate).map_err(gemm_err)?;
        }
        Ok(())
    }
}

/// True when `batches` products of `work` multiply-adds each should be
/// spread over the pool: each too small to thread, all together enough.
fn spread_over_batches(batches: usize, work: usize) -> bool {
    let threshold = matmul::PARALLEL_WORK_THRESHOLD;
    batches > 1
        && work < threshold
        && work.saturating_mul(batches) >= threshold
        && oxnet_core::parallel::num_threads() > 1
}

/// A refused product: a bug in the shape checks, reported as an error.
fn gemm_err(e: MatmulError) -> Error {
    Error::Shape(e.to_string())
}
