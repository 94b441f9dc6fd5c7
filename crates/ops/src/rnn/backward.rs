//! The fused RNN's backward pass: layers from the top, each direction's
//! steps in reverse processing order with one small product per step for
//! the gradient of the previous state; then the weight gradients and the
//! input gradient as single products over every step.

use super::config::{Config, Mode, ParamLayout, Workspace};
use super::forward::{gemm_err, step_time, valid, Dims, Regions, Weights};
use super::gates::{self, zero, Clip, RnnFloat};
use crate::kernels::matmul::matmul;
use oxnet_core::Result;

/// The gradients one backward call computes (zero-initialised by the
/// caller, written here).
pub(crate) struct Grads<'a, T> {
    pub data: &'a mut [T],
    pub params: &'a mut [T],
    pub state: &'a mut [T],
    pub state_cell: Option<&'a mut [T]>,
}

/// What one backward call reads: the forward's inputs and outputs.
pub(crate) struct Backward<'a, T> {
    pub cfg: &'a Config,
    pub dims: Dims,
    pub data: &'a [T],
    pub params: &'a [T],
    pub h0: &'a [T],
    pub c0: Option<&'a [T]>,
    pub lens: Option<&'a [usize]>,
    /// The forward's output.
    pub out: &'a [T],
    /// The forward's workspace.
    pub work: &'a [T],
}

impl<T: RnnFloat> Backward<'_, T> {
    /// Gradients from `dout` (of the output) and `dhy`/`dcy` (of the final
    /// states, when they were outputs).
    pub(crate) fn run(
        &self,
        dout: &[T],
        dhy: Option<&[T]>,
        dcy: Option<&[T]>,
        grads: Grads<T>,
    ) -> Result<()> {
        let (cfg, dims) = (self.cfg, self.dims);
        let lay = cfg.param_layout(dims.input);
        let ws = cfg.workspace(dims.steps, dims.batch);
        let rows = dims.rows();
        let width = cfg.dirs * cfg.out_size();
        let Grads { data: ddata, params: dparams, state: dstate, mut state_cell } = grads;
        let mut dy: Vec<T> = dout.to_vec();
        for l in (0..cfg.num_layers).rev() {
            let ni = cfg.layer_input(l, dims.input);
            let x: &[T] = match l {
                0 => self.data,
                _ => {
                    let lw = ws.layers[l - 1];
                    let at = if cfg.has_dropout() { lw.dropped } else { lw.output };
                    &self.work[at..at + rows * width]
                }
            };
            let y: &[T] = if l + 1 == cfg.num_layers {
                self.out
            } else {
                &self.work[ws.layers[l].output..][..rows * width]
            };
            let mut dx = vec![zero::<T>(); rows * ni];
            let mut dp = Regions::new(dparams);
            for d in 0..cfg.dirs {
                let k = l * cfg.dirs + d;
                let (n, o, h) = (dims.batch, cfg.out_size(), cfg.state_size);
                let dh0 = &mut dstate[k * n * o..(k + 1) * n * o];
                let dc0 = state_cell.as_deref_mut().map(|s| &mut s[k * n * h..(k + 1) * n * h]);
                let dhy_k = dhy.map(|s| &s[k * n * o..(k + 1) * n * o]);
                let dcy_k = dcy.map(|s| &s[k * n * h..(k + 1) * n * h]);
                let step = Direction { back: self, lay: &lay, ws: &ws, l, d, x, ni, y };
                step.run(&dy, dhy_k, dcy_k, &mut dx, &mut dp, dh0, dc0)?;
            }
            if l == 0 {
                ddata.copy_from_slice(&dx);
            } else {
                dy = dx;
                if cfg.has_dropout() {
                    let mask = &self.work[ws.layers[l - 1].mask..][..rows * width];
                    for (g, &m) in dy.iter_mut().zip(mask) {
                        *g = *g * m;
                    }
                }
            }
        }
        Ok(())
    }
}

/// One direction of one layer, backward.
struct Direction<'a, 'b, T> {
    back: &'a Backward<'b, T>,
    lay: &'a ParamLayout,
    ws: &'a Workspace,
    l: usize,
    d: usize,
    /// The layer's input (rows × ni).
    x: &'a [T],
    ni: usize,
    /// The layer's output (rows × dirs·out_size).
    y: &'a [T],
}

impl<T: RnnFloat> Direction<'_, '_, T> {
    /// Adds this direction's part of the input gradient to `dx`, writes its
    /// weight gradients into `dp` (the parameter gradient) and the initial
    /// states' gradients to `dh0`/`dc0`.
    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        dy: &[T],
        dhy: Option<&[T]>,
        dcy: Option<&[T]>,
        dx: &mut [T],
        dp: &mut Regions<T>,
        dh0: &mut [T],
        dc0: Option<&mut [T]>,
    ) -> Result<()> {
        let b = self.back;
        let (cfg, dims, lens) = (b.cfg, b.dims, b.lens);
        let (n, steps, rows) = (dims.batch, dims.steps, dims.rows());
        let (g, h, o) = (cfg.gate_rows(), cfg.state_size, cfg.out_size());
        let (l, d, k) = (self.l, self.d, self.l * cfg.dirs + self.d);
        let width = cfg.dirs * o;
        let w = Weights::of(cfg, self.lay, b.params, l, d, dims.input);
        let blk = self.ws.blocks[k];
        let gates_all = &b.work[blk.gates..][..rows * g];
        let cells_all = (cfg.mode == Mode::Lstm).then(|| &b.work[blk.cells..][..rows * h]);
        let extra_all =
            (cfg.mode == Mode::Gru || cfg.projection.is_some()).then(|| &b.work[blk.extra..][..rows * h]);
        let h0 = &b.h0[k * n * o..(k + 1) * n * o];
        let c0 = b.c0.map(|c| &c[k * n * h..(k + 1) * n * h]);
        let hprev = self.previous_states(h0);

        let mut dg = vec![zero::<T>(); rows * g];
        // GRU: the hidden side's gate gradients differ in the n block
        let mut dgh = if cfg.mode == Mode::Gru { vec![zero::<T>(); rows * g] } else { Vec::new() };
        // with a projection: the gradient of each step's projected state
        let mut dproj = if cfg.projection.is_some() { vec![zero::<T>(); rows * o] } else { Vec::new() };
        let mut dh = dhy.map_or_else(|| vec![zero::<T>(); n * o], <[T]>::to_vec);
        let mut dc = dcy.map_or_else(|| vec![zero::<T>(); n * h], <[T]>::to_vec);
        let mut dtot = vec![zero::<T>(); n * o];
        let mut dcell = vec![zero::<T>(); n * h];
        let mut direct = vec![zero::<T>(); n * h];
        let mut scratch = vec![zero::<T>(); h];
        let clip = cfg.clip.map(|(lo, hi)| Clip { lo: T::of(lo), hi: T::of(hi), nan: cfg.clip_nan });
        let relu = cfg.mode == Mode::RnnRelu;
        let (mut keep_dh, mut keep_dc) = (Vec::new(), Vec::new());
        for s in (0..steps).rev() {
            let t = step_time(d, s, steps);
            if lens.is_some() {
                keep_dh.clone_from(&dh);
                keep_dc.clone_from(&dc);
            }
            for bi in 0..n {
                let src = &dy[(t * n + bi) * width + d * o..][..o];
                for j in 0..o {
                    dtot[bi * o + j] = src[j] + dh[bi * o + j];
                }
            }
            let rs = t * n..(t + 1) * n;
            let gt = &gates_all[rs.start * g..rs.end * g];
            let dgt = &mut dg[rs.start * g..rs.end * g];
            match cfg.mode {
                Mode::Lstm => {
                    let cells = cells_all.expect("LSTM keeps its cells");
                    // the cell state before this step (carried through
                    // steps a sequence lacks, so the table holds it)
                    let c_prev = match s.checked_sub(1) {
                        None => c0.expect("LSTM has an initial cell state"),
                        Some(p) => &cells[step_time(d, p, steps) * n * h..][..n * h],
                    };
                    let ct = &cells[t * n * h..(t + 1) * n * h];
                    let dhc: &[T] = match w.wr {
                        Some(wr) => {
                            dproj[rs.start * o..rs.end * o].copy_from_slice(&dtot);
                            matmul(&dtot, wr, &mut dcell, n, o, h, false, false, false).map_err(gemm_err)?;
                            &dcell
                        }
                        None => &dtot,
                    };
                    gates::lstm_backward(h, gt, ct, c_prev, dhc, &mut dc, dgt, clip, &mut scratch);
                    matmul(dgt, w.wh, &mut dh, n, g, o, false, false, false).map_err(gemm_err)?;
                }
                Mode::Gru => {
                    let extra = extra_all.expect("GRU keeps Wh_n·h + bh_n");
                    let dght = &mut dgh[rs.start * g..rs.end * g];
                    let hp = &hprev[rs.start * o..rs.end * o];
                    gates::gru_backward(
                        h,
                        gt,
                        &extra[t * n * h..(t + 1) * n * h],
                        hp,
                        &dtot,
                        dgt,
                        dght,
                        &mut direct,
                    );
                    dh.copy_from_slice(&direct);
                    matmul(dght, w.wh, &mut dh, n, g, o, false, false, true).map_err(gemm_err)?;
                }
                Mode::RnnRelu | Mode::RnnTanh => {
                    gates::plain_backward(relu, gt, &dtot, dgt);
                    matmul(dgt, w.wh, &mut dh, n, g, o, false, false, false).map_err(gemm_err)?;
                }
            }
            if let Some(lens) = lens {
                // sequences without step t: no gradient through it, the
                // state gradients pass unchanged
                for (bi, &len) in lens.iter().enumerate() {
                    if t >= len {
                        dgt[bi * g..(bi + 1) * g].fill(zero::<T>());
                        if !dgh.is_empty() {
                            dgh[(rs.start + bi) * g..(rs.start + bi + 1) * g].fill(zero::<T>());
                        }
                        if !dproj.is_empty() {
                            dproj[(rs.start + bi) * o..(rs.start + bi + 1) * o].fill(zero::<T>());
                        }
                        dh[bi * o..(bi + 1) * o].copy_from_slice(&keep_dh[bi * o..(bi + 1) * o]);
                        if cfg.mode == Mode::Lstm {
                            dc[bi * h..(bi + 1) * h].copy_from_slice(&keep_dc[bi * h..(bi + 1) * h]);
                        }
                    }
                }
            }
        }
        dh0.copy_from_slice(&dh);
        if let Some(dc0) = dc0 {
            dc0.copy_from_slice(&dc);
        }

        // the weight gradients and the input gradient, over every step at once
        let blk_p = self.lay.blocks[k];
        let dgh: &[T] = if dgh.is_empty() { &dg } else { &dgh };
        // SAFETY: each (layer, direction)'s matrices have their own ranges
        // of the parameter vector, and each is taken once here
        let (dwx, dwh, dbx, dbh) = unsafe {
            (dp.at(blk_p.wx, g * self.ni), dp.at(blk_p.wh, g * o), dp.at(blk_p.bx, g), dp.at(blk_p.bh, g))
        };
        matmul(&dg, self.x, dwx, g, rows, self.ni, true, false, false).map_err(gemm_err)?;
        matmul(dgh, &hprev, dwh, g, rows, o, true, false, false).map_err(gemm_err)?;
        column_sums(&dg, dbx);
        column_sums(dgh, dbh);
        if let (Some(_), Some(extra)) = (w.wr, extra_all) {
            let dwr = unsafe { dp.at(blk_p.wr, o * h) };
            matmul(&dproj, extra, dwr, o, rows, h, true, false, false).map_err(gemm_err)?;
        }
        matmul(&dg, w.wx, dx, rows, g, self.ni, false, false, d > 0).map_err(gemm_err)?;
        Ok(())
    }

    /// The state before each step, as a table of rows (`t·batch + n`):
    /// the previous step's output, or the initial state before the first
    /// step and after steps a sequence does not have (the state was
    /// carried from the start there).
    fn previous_states(&self, h0: &[T]) -> Vec<T> {
        let b = self.back;
        let (n, steps, o) = (b.dims.batch, b.dims.steps, b.cfg.out_size());
        let width = b.cfg.dirs * o;
        let mut prev = vec![zero::<T>(); b.dims.rows() * o];
        for s in 0..steps {
            let t = step_time(self.d, s, steps);
            for bi in 0..n {
                let dst = &mut prev[(t * n + bi) * o..][..o];
                match s.checked_sub(1).map(|p| step_time(self.d, p, steps)) {
                    Some(tp) if valid(b.lens, tp, bi) => {
                        dst.copy_from_slice(&self.y[(tp * n + bi) * width + self.d * o..][..o])
                    }
                    _ => dst.copy_from_slice(&h0[bi * o..(bi + 1) * o]),
                }
            }
        }
        prev
    }
}

/// `out[j] = Σ_r m[r, j]` over the rows of `m` (out.len() columns).
fn column_sums<T: RnnFloat>(m: &[T], out: &mut [T]) {
    out.fill(zero::<T>());
    for row in m.chunks_exact(out.len()) {
        gates::add_into(out, row);
    }
}
