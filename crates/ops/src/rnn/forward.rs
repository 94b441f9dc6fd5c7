//! The fused RNN's forward pass: per layer and direction, one product for
//! the input projection of every step, then one small product per step for
//! the hidden state and one pass over the gates; what the gradient needs
//! goes to the workspace.

use super::config::{Config, Mode, ParamLayout, Workspace};
use super::gates::{self, one, zero, Clip, RnnFloat};
use crate::kernels::matmul::matmul;
use oxnet_core::{Error, Result};

/// Sequence length, batch size and input size of a call.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dims {
    pub steps: usize,
    pub batch: usize,
    pub input: usize,
}

impl Dims {
    /// Rows of a per-step table: steps × batch.
    pub(crate) fn rows(&self) -> usize {
        self.steps * self.batch
    }
}

/// The weights of one (layer, direction), borrowed from the flat vector.
pub(crate) struct Weights<'a, T> {
    pub wx: &'a [T],
    pub wh: &'a [T],
    pub wr: Option<&'a [T]>,
    pub bx: &'a [T],
    pub bh: &'a [T],
}

impl<'a, T> Weights<'a, T> {
    pub(crate) fn of(
        cfg: &Config,
        lay: &ParamLayout,
        params: &'a [T],
        l: usize,
        d: usize,
        input: usize,
    ) -> Self {
        let b = lay.blocks[l * cfg.dirs + d];
        let (g, h, o, ni) = (cfg.gate_rows(), cfg.state_size, cfg.out_size(), cfg.layer_input(l, input));
        Weights {
            wx: &params[b.wx..b.wx + g * ni],
            wh: &params[b.wh..b.wh + g * o],
            wr: cfg.projection.map(|_| &params[b.wr..b.wr + o * h]),
            bx: &params[b.bx..b.bx + g],
            bh: &params[b.bh..b.bh + g],
        }
    }
}

/// The workspace output, handed out as disjoint regions. Every region
/// taken from one `Regions` must be distinct ([`Workspace`] lays them out
/// end to end), which the callers in this module keep to.
pub(crate) struct Regions<T> {
    ptr: *mut T,
    len: usize,
}

impl<T> Regions<T> {
    pub(crate) fn new(work: &mut [T]) -> Self {
        Regions { ptr: work.as_mut_ptr(), len: work.len() }
    }

    /// The `n` elements at `offset`.
    ///
    /// # Safety
    /// No other live slice from this `Regions` may overlap the range.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn at(&self, offset: usize, n: usize) -> &mut [T] {
        assert!(offset + n <= self.len, "RNN workspace region out of range");
        // SAFETY: in bounds (checked); exclusivity is the caller's promise
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(offset), n) }
    }
}

/// The step processed `s`-th by direction `d`: forward in time, or
/// backward for the reverse direction.
#[inline]
pub(crate) fn step_time(d: usize, s: usize, steps: usize) -> usize {
    if d == 0 {
        s
    } else {
        steps - 1 - s
    }
}

/// Whether sequence `n` has step `t` (always, without lengths).
#[inline]
pub(crate) fn valid(lens: Option<&[usize]>, t: usize, n: usize) -> bool {
    lens.is_none_or(|l| t < l[n])
}

/// `x·Wxᵀ + bx` for every row of `x` into `out` (rows × gates·H).
pub(crate) fn input_projection<T: RnnFloat>(
    x: &[T],
    w: &Weights<T>,
    rows: usize,
    ni: usize,
    out: &mut [T],
) -> Result<()> {
    let g = w.bx.len();
    matmul(x, w.wx, out, rows, ni, g, false, true, false).map_err(gemm_err)?;
    for row in out.chunks_exact_mut(g) {
        gates::add_into(row, w.bx);
    }
    Ok(())
}

/// A matrix-product error as the RNN operator's.
pub(crate) fn gemm_err(e: crate::kernels::matmul::MatmulError) -> Error {
    Error::Invalid(format!("RNN: {e}"))
}

/// What one forward call reads and writes.
pub(crate) struct Forward<'a, T> {
    pub cfg: &'a Config,
    pub dims: Dims,
    pub params: &'a [T],
    pub h0: &'a [T],
    pub c0: Option<&'a [T]>,
    pub lens: Option<&'a [usize]>,
    /// Dropout masks between layers are drawn (train mode).
    pub training: bool,
}

impl<T: RnnFloat> Forward<'_, T> {
    /// Runs every layer. `out` is (steps, batch, dirs·out_size); `hy`/`cy`
    /// receive the final states when given; `work` is the workspace
    /// output; `draw` fills a dropout mask with 0 or 1/(1-p).
    pub(crate) fn run(
        &self,
        data: &[T],
        out: &mut [T],
        mut hy: Option<&mut [T]>,
        mut cy: Option<&mut [T]>,
        work: &mut [T],
        draw: &mut dyn FnMut(&mut [T]),
    ) -> Result<()> {
        let (cfg, dims) = (self.cfg, self.dims);
        let lay = cfg.param_layout(dims.input);
        let ws = cfg.workspace(dims.steps, dims.batch);
        let regions = Regions::new(work);
        let width = cfg.dirs * cfg.out_size();
        let rows = dims.rows();
        for l in 0..cfg.num_layers {
            let ni = cfg.layer_input(l, dims.input);
            // SAFETY (all regions below): the workspace layout gives every
            // block and layer table its own range
            let x: &[T] = match l {
                0 => data,
                _ => {
                    let lw = ws.layers[l - 1];
                    unsafe {
                        regions.at(if cfg.has_dropout() { lw.dropped } else { lw.output }, rows * width)
                    }
                }
            };
            let y: &mut [T] = if l + 1 == cfg.num_layers {
                &mut *out
            } else {
                unsafe { regions.at(ws.layers[l].output, rows * width) }
            };
            for d in 0..cfg.dirs {
                let k = l * cfg.dirs + d;
                let (o, h) = (cfg.out_size(), cfg.state_size);
                let hy_k = hy.as_deref_mut().map(|s| &mut s[k * dims.batch * o..(k + 1) * dims.batch * o]);
                let cy_k = cy.as_deref_mut().map(|s| &mut s[k * dims.batch * h..(k + 1) * dims.batch * h]);
                self.direction(&lay, &ws, &regions, l, d, x, ni, y, hy_k, cy_k)?;
            }
            if l + 1 < cfg.num_layers && cfg.has_dropout() {
                let lw = ws.layers[l];
                let (mask, dropped) =
                    unsafe { (regions.at(lw.mask, rows * width), regions.at(lw.dropped, rows * width)) };
                if self.training {
                    draw(mask);
                } else {
                    mask.fill(one::<T>());
                }
                for ((o, &v), &m) in dropped.iter_mut().zip(y.iter()).zip(mask.iter()) {
                    *o = v * m;
                }
            }
        }
        Ok(())
    }

    /// One direction of one layer: `x` (rows × ni) in, its columns
    /// `d·out_size..` of `y` (rows × dirs·out_size) out.
    #[allow(clippy::too_many_arguments)]
    fn direction(
        &self,
        lay: &ParamLayout,
        ws: &Workspace,
        regions: &Regions<T>,
        l: usize,
        d: usize,
        x: &[T],
        ni: usize,
        y: &mut [T],
        hy: Option<&mut [T]>,
        cy: Option<&mut [T]>,
    ) -> Result<()> {
        let (cfg, dims) = (self.cfg, self.dims);
        let (n, steps, rows) = (dims.batch, dims.steps, dims.rows());
        let (g, h, o) = (cfg.gate_rows(), cfg.state_size, cfg.out_size());
        let width = cfg.dirs * o;
        let k = l * cfg.dirs + d;
        let w = Weights::of(cfg, lay, self.params, l, d, dims.input);
        let blk = ws.blocks[k];
        // SAFETY: distinct ranges of the workspace (see `Workspace`)
        let gates_all = unsafe { regions.at(blk.gates, rows * g) };
        let mut cells_all =
            if cfg.mode == Mode::Lstm { Some(unsafe { regions.at(blk.cells, rows * h) }) } else { None };
        let mut extra_all = match (cfg.mode, cfg.projection) {
            (Mode::Gru, _) | (Mode::Lstm, Some(_)) => Some(unsafe { regions.at(blk.extra, rows * h) }),
            _ => None,
        };
        input_projection(x, &w, rows, ni, gates_all)?;
        let mut hcur = self.h0[k * n * o..(k + 1) * n * o].to_vec();
        let mut ccur = self.c0.map(|c| c[k * n * h..(k + 1) * n * h].to_vec()).unwrap_or_default();
        let mut hnew = vec![zero::<T>(); n * o];
        let mut hidden = vec![zero::<T>(); n * g];
        let clip = cfg.clip.map(|(lo, hi)| Clip { lo: T::of(lo), hi: T::of(hi), nan: cfg.clip_nan });
        let relu = cfg.mode == Mode::RnnRelu;
        for s in 0..steps {
            let t = step_time(d, s, steps);
            matmul(&hcur, w.wh, &mut hidden, n, o, g, false, true, false).map_err(gemm_err)?;
            for row in hidden.chunks_exact_mut(g) {
                gates::add_into(row, w.bh);
            }
            let gt = &mut gates_all[t * n * g..(t + 1) * n * g];
            match cfg.mode {
                Mode::Lstm => {
                    let cells = cells_all.as_deref_mut().expect("LSTM keeps its cells");
                    let ct = &mut cells[t * n * h..(t + 1) * n * h];
                    match (w.wr, extra_all.as_deref_mut()) {
                        (Some(wr), Some(extra)) => {
                            let rt = &mut extra[t * n * h..(t + 1) * n * h];
                            gates::lstm_forward(h, gt, &hidden, &ccur, ct, rt, clip);
                            matmul(rt, wr, &mut hnew, n, h, o, false, true, false).map_err(gemm_err)?;
                        }
                        _ => gates::lstm_forward(h, gt, &hidden, &ccur, ct, &mut hnew, clip),
                    }
                    carry_rows(self.lens, t, h, &ccur, ct);
                    ccur.copy_from_slice(ct);
                }
                Mode::Gru => {
                    let extra = extra_all.as_deref_mut().expect("GRU keeps Wh_n·h + bh_n");
                    gates::gru_forward(
                        h,
                        gt,
                        &hidden,
                        &hcur,
                        &mut extra[t * n * h..(t + 1) * n * h],
                        &mut hnew,
                    );
                }
                Mode::RnnRelu | Mode::RnnTanh => {
                    gates::plain_forward(relu, gt, &hidden);
                    hnew.copy_from_slice(gt);
                }
            }
            carry_rows(self.lens, t, o, &hcur, &mut hnew);
            for b in 0..n {
                let dst = &mut y[(t * n + b) * width + d * o..][..o];
                if valid(self.lens, t, b) {
                    dst.copy_from_slice(&hnew[b * o..(b + 1) * o]);
                } else {
                    dst.fill(zero::<T>());
                }
            }
            std::mem::swap(&mut hcur, &mut hnew);
        }
        if let Some(hy) = hy {
            hy.copy_from_slice(&hcur);
        }
        if let Some(cy) = cy {
            cy.copy_from_slice(&ccur);
        }
        Ok(())
    }
}

/// For the sequences without step `t`, the state does not move: their
/// rows of `new` (of `width` each) are set back to `prev`.
fn carry_rows<T: Copy>(lens: Option<&[usize]>, t: usize, width: usize, prev: &[T], new: &mut [T]) {
    if let Some(lens) = lens {
        for (b, &len) in lens.iter().enumerate() {
            if t >= len {
                new[b * width..(b + 1) * width].copy_from_slice(&prev[b * width..(b + 1) * width]);
            }
        }
    }
}
