//! The fused recurrent operator `RNN` (alias `_npx_rnn`), as MXNet 1.9.1
//! defines it: stacked layers of plain RNN (`rnn_relu`, `rnn_tanh`), LSTM
//! or GRU over data of shape (steps, batch, input), optionally
//! bidirectional, with dropout between layers in train mode.
//!
//! Inputs: `data`, `parameters` (every weight of every layer in one vector,
//! MXNet's layout: all weights, then all biases; layer by layer, the
//! forward direction before the reverse; input-to-hidden, hidden-to-hidden,
//! then the projection), `state` (layers·dirs, batch, out_size),
//! `state_cell` (LSTM) and `sequence_length` (with `use_sequence_length`).
//! Outputs: `output` (steps, batch, dirs·out_size), and with
//! `state_outputs` the final `state_output` and `statecell_output`. A last,
//! hidden output keeps the gates of every step for the gradient.
//!
//! MXNet 1.9.1 runs `projection_size`, `lstm_state_clip_*` and
//! `use_sequence_length` on cuDNN only; oxnet runs them on the CPU with
//! cuDNN's meaning: a sequence of length `len` has steps `0..len` (the
//! reverse direction starts at `len - 1`), its outputs after `len` are
//! zero and its final state is the one after its last step.

mod backward;
mod config;
mod forward;
mod gates;
#[cfg(test)]
mod tests;

use crate::shape_ops::set_shape;
use backward::{Backward, Grads};
use config::{Config, Mode};
use forward::{Dims, Forward};
use gates::{zero, RnnFloat};
use oxnet_core::shape::Shape;
use oxnet_core::{
    registry, AttrKind, AttrSpec, AttrValue, BackwardArgs, BackwardDeps, DType, Error, NDArray, OpContext,
    OpDef, Req, Result,
};
use rand::RngCore;

/// Registers `RNN`.
pub(crate) fn register() {
    registry::register(
        OpDef::new("RNN")
            .alias("_npx_rnn")
            .doc("Applies stacked recurrent layers (modes rnn_relu, rnn_tanh, lstm, gru) to data of shape (sequence length, batch, input size). `parameters` holds every weight and bias in one vector (MXNet's layout: all weights, then all biases; layer by layer, forward direction first; input-to-hidden, hidden-to-hidden, projection); its length follows from the data's input size. `state` (and `state_cell` for lstm) are the initial states, of shape (num_layers·directions, batch, state size). With `state_outputs` the final states are outputs too. Dropout `p` applies to each layer's output but the last, in train mode.")
            .attr(AttrSpec::required("state_size", AttrKind::Int, "size of the state for each layer"))
            .attr(AttrSpec::required("num_layers", AttrKind::Int, "number of stacked layers"))
            .attr(AttrSpec::optional("bidirectional", AttrKind::Bool, false, "whether to use bidirectional recurrent layers"))
            .attr(AttrSpec::required("mode", AttrKind::Choice(Mode::NAMES.to_vec()), "the type of RNN to compute"))
            .attr(AttrSpec::optional("p", AttrKind::Float, 0.0, "drop rate of the dropout on the outputs of each RNN layer, except the last layer"))
            .attr(AttrSpec::optional("state_outputs", AttrKind::Bool, false, "whether to have the states as symbol outputs"))
            .attr(AttrSpec::optional("projection_size", AttrKind::OptInt, AttrValue::None, "size of the projection of each LSTM step's hidden state (None: no projection)"))
            .attr(AttrSpec::optional("lstm_state_clip_min", AttrKind::Str, "None", "minimum of the LSTM cell state (with lstm_state_clip_max)"))
            .attr(AttrSpec::optional("lstm_state_clip_max", AttrKind::Str, "None", "maximum of the LSTM cell state (with lstm_state_clip_min)"))
            .attr(AttrSpec::optional("lstm_state_clip_nan", AttrKind::Bool, false, "whether a NaN cell state becomes the clipping minimum"))
            .attr(AttrSpec::optional("use_sequence_length", AttrKind::Bool, false, "whether the last input `sequence_length` gives each sequence's length"))
            .arguments_fn(|attrs| Ok(Config::from_attrs(attrs)?.arguments()))
            .outputs_fn(|attrs| Ok(Config::from_attrs(attrs)?.outputs()))
            .hidden_outputs(1)
            .infer_shape(|attrs, ins, outs| infer_shape(attrs, ins, outs, false))
            .infer_shape_partial(|attrs, ins, outs| infer_shape(attrs, ins, outs, true))
            .infer_type(infer_type)
            .resource(oxnet_core::Resource::Random)
            .forward(forward)
            .backward(
                |attrs| {
                    // the visible outputs' gradients; every input; the output and the workspace
                    let (outs, ins) =
                        Config::from_attrs(attrs).map_or((1, 3), |c| (c.visible_outputs(), c.arguments().len()));
                    BackwardDeps { out_grads: (0..outs).collect(), inputs: (0..ins).collect(), outputs: vec![0, outs] }
                },
                backward,
            ),
    );
}

/// The expected shapes of the inputs and outputs from the data's. With
/// `partial` (graph inference) a dimension of 0 is unknown: the data must
/// be known to infer anything, and known dimensions elsewhere must agree.
fn infer_shape(
    attrs: &oxnet_core::Attrs,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
    partial: bool,
) -> Result<()> {
    let cfg = Config::from_attrs(attrs)?;
    let Some(data) = ins[0].clone() else { return Ok(()) };
    let dims = dims_of(&data)?;
    if partial && data.contains(&0) {
        return Ok(());
    }
    let set_shape = |slot: &mut Option<Shape>, want: Shape, what: &str| {
        if partial {
            crate::partial_shape::merge(slot, &want, what)
        } else {
            set_shape(slot, want, what)
        }
    };
    let (layers, n, o, h) = (cfg.num_layers * cfg.dirs, dims.batch, cfg.out_size(), cfg.state_size);
    let lay = cfg.param_layout(dims.input);
    if let Some(p) = &ins[1] {
        if p.as_slice() != [lay.len] && !(partial && p.as_slice() == [0]) {
            return Err(Error::Shape(format!(
                "RNN: `parameters` has shape {:?}, expected ({},): mode {:?}, {} layer(s), {} direction(s), input size {}, state size {}{} give {} values (all weights, then all biases; layer by layer, forward direction first; input-to-hidden, hidden-to-hidden{})",
                p.as_slice(),
                lay.len,
                attrs.str("mode")?,
                cfg.num_layers,
                cfg.dirs,
                dims.input,
                h,
                cfg.projection.map_or(String::new(), |p| format!(", projection size {p}")),
                lay.len,
                if cfg.projection.is_some() { ", projection" } else { "" }
            )));
        }
    }
    set_shape(&mut ins[1], Shape::from_slice(&[lay.len]), "RNN: `parameters`")?;
    set_shape(&mut ins[2], Shape::from_slice(&[layers, n, o]), "RNN: `state`")?;
    if cfg.mode == Mode::Lstm {
        set_shape(&mut ins[3], Shape::from_slice(&[layers, n, h]), "RNN: `state_cell`")?;
    }
    if let Some(i) = cfg.sequence_length_input() {
        set_shape(&mut ins[i], Shape::from_slice(&[n]), "RNN: `sequence_length`")?;
    }
    set_shape(&mut outs[0], Shape::from_slice(&[dims.steps, n, cfg.dirs * o]), "RNN: `output`")?;
    if cfg.state_outputs {
        set_shape(&mut outs[1], Shape::from_slice(&[layers, n, o]), "RNN: `state_output`")?;
        if cfg.mode == Mode::Lstm {
            set_shape(&mut outs[2], Shape::from_slice(&[layers, n, h]), "RNN: `statecell_output`")?;
        }
    }
    let last = outs.len() - 1;
    set_shape(&mut outs[last], Shape::from_slice(&[cfg.workspace(dims.steps, n).len]), "RNN: the workspace")
}

/// Every input but `sequence_length` (any number type) and every output
/// has the data's dtype, float32 or float64.
fn infer_type(
    attrs: &oxnet_core::Attrs,
    ins: &mut [Option<DType>],
    outs: &mut [Option<DType>],
) -> Result<()> {
    let cfg = Config::from_attrs(attrs)?;
    let lens = cfg.sequence_length_input();
    let Some(t) = ins[0].or(ins[1]).or(outs[0]) else { return Ok(()) };
    if !t.is_float() || t == DType::F16 {
        return Err(Error::DType(format!("RNN: the data must be float32 or float64, got {}", t.name())));
    }
    let names = cfg.arguments();
    for (i, slot) in ins.iter_mut().enumerate() {
        match slot {
            Some(have) if *have != t && Some(i) != lens => {
                return Err(Error::DType(format!(
                    "RNN: `{}` has dtype {}, the data {}",
                    names.get(i).map_or("?", String::as_str),
                    have.name(),
                    t.name()
                )))
            }
            None => *slot = Some(t),
            _ => {}
        }
    }
    for o in outs.iter_mut() {
        *o = Some(t);
    }
    Ok(())
}

/// (steps, batch, input) of data of shape `shape`.
fn dims_of(shape: &[usize]) -> Result<Dims> {
    match *shape {
        [steps, batch, input] => Ok(Dims { steps, batch, input }),
        _ => Err(Error::Shape(format!(
            "RNN: `data` must have 3 axes (sequence length, batch, input size), got shape {shape:?}"
        ))),
    }
}

/// Each sequence's length from the `sequence_length` input, checked to lie
/// in [0, steps].
fn lengths(input: &NDArray, dims: Dims) -> Result<Vec<usize>> {
    input
        .to_vec::<f64>()?
        .into_iter()
        .map(|v| {
            if v.is_nan() || v < 0.0 || v > dims.steps as f64 || v.fract() != 0.0 {
                Err(Error::Invalid(format!(
                    "RNN: `sequence_length` holds {v}, outside [0, {}] (the sequence length of `data`)",
                    dims.steps
                )))
            } else {
                Ok(v as usize)
            }
        })
        .collect()
}

fn forward(ctx: &OpContext, ins: &[NDArray], outs: &[NDArray]) -> Result<()> {
    let cfg = Config::from_attrs(ctx.attrs)?;
    match ins[0].dtype() {
        DType::F32 => forward_typed::<f32>(ctx, &cfg, ins, outs),
        DType::F64 => forward_typed::<f64>(ctx, &cfg, ins, outs),
        t => Err(Error::DType(format!("RNN: the data must be float32 or float64, got {}", t.name()))),
    }
}

fn forward_typed<T: RnnFloat>(
    ctx: &OpContext,
    cfg: &Config,
    ins: &[NDArray],
    outs: &[NDArray],
) -> Result<()> {
    let dims = dims_of(ins[0].shape())?;
    let lens = cfg.sequence_length_input().map(|i| lengths(&ins[i], dims)).transpose()?;
    let c0 = if cfg.mode == Mode::Lstm { Some(ins[3].as_slice::<T>()?) } else { None };
    let run = Forward {
        cfg,
        dims,
        params: ins[1].as_slice::<T>()?,
        h0: ins[2].as_slice::<T>()?,
        c0,
        lens: lens.as_deref(),
        training: ctx.is_train,
    };
    let vis = cfg.visible_outputs();
    // the kernel writes whole arrays: results go to fresh buffers first when
    // a request adds or skips
    let direct = ctx.req[..vis].iter().all(|r| matches!(r, Req::Write | Req::Inplace));
    let mut out = if direct { Vec::new() } else { vec![zero::<T>(); outs[0].size()] };
    let mut hy = if direct || !cfg.state_outputs { Vec::new() } else { vec![zero::<T>(); outs[1].size()] };
    let mut cy = if direct || vis < 3 { Vec::new() } else { vec![zero::<T>(); outs[2].size()] };
    let work = outs[vis].as_mut_slice::<T>()?;
    let keep = 1.0 - cfg.p;
    let scale = T::of(1.0 / keep);
    let threshold = (keep * (1u64 << 53) as f64).ceil() as u64;
    let mut draw = |mask: &mut [T]| {
        ctx.with_rng(|rng| {
            for m in mask.iter_mut() {
                *m = if (rng.next_u64() >> 11) < threshold { scale } else { zero::<T>() };
            }
        })
    };
    {
        let out_s: &mut [T] = if direct { outs[0].as_mut_slice::<T>()? } else { &mut out };
        let hy_s: Option<&mut [T]> = match (cfg.state_outputs, direct) {
            (false, _) => None,
            (true, true) => Some(outs[1].as_mut_slice::<T>()?),
            (true, false) => Some(&mut hy),
        };
        let cy_s: Option<&mut [T]> = match (vis, direct) {
            (3, true) => Some(outs[2].as_mut_slice::<T>()?),
            (3, false) => Some(&mut cy),
            _ => None,
        };
        run.run(ins[0].as_slice::<T>()?, out_s, hy_s, cy_s, work, &mut draw)?;
    }
    if !direct {
        for (i, v) in [(0, &out), (1, &hy), (2, &cy)] {
            if i < vis {
                oxnet_core::store::store_slice(ctx.req[i], outs[i].as_mut_slice::<T>()?, v);
            }
        }
    }
    Ok(())
}

fn backward(ctx: &OpContext, args: &BackwardArgs, grads: &[NDArray]) -> Result<()> {
    let cfg = Config::from_attrs(ctx.attrs)?;
    let missing = || Error::Autograd("RNN: the backward kernel lacks a saved array".into());
    let data = args.inputs[0].as_ref().ok_or_else(missing)?;
    match data.dtype() {
        DType::F32 => backward_typed::<f32>(ctx, &cfg, args, grads),
        DType::F64 => backward_typed::<f64>(ctx, &cfg, args, grads),
        t => Err(Error::DType(format!("RNN: the data must be float32 or float64, got {}", t.name()))),
    }
}

fn backward_typed<T: RnnFloat>(
    ctx: &OpContext,
    cfg: &Config,
    args: &BackwardArgs,
    grads: &[NDArray],
) -> Result<()> {
    let missing = || Error::Autograd("RNN: the backward kernel lacks a saved array".into());
    let input = |i: usize| args.inputs.get(i).and_then(|a| a.as_ref()).ok_or_else(missing);
    let dims = dims_of(input(0)?.shape())?;
    let vis = cfg.visible_outputs();
    let out = args.outputs.first().and_then(|a| a.as_ref()).ok_or_else(missing)?;
    let work = args.outputs.get(vis).and_then(|a| a.as_ref()).ok_or_else(missing)?;
    let lens = cfg.sequence_length_input().map(|i| input(i).and_then(|a| lengths(a, dims))).transpose()?;
    // a head gradient may be a strided view, or absent (zero)
    let contiguous = |i: usize| -> Result<Option<Vec<T>>> {
        match args.out_grads.get(i).and_then(|g| g.as_ref()) {
            None => Ok(None),
            Some(g) => Ok(Some(if g.is_contiguous() {
                g.as_slice::<T>()?.to_vec()
            } else {
                g.copy()?.to_vec::<T>()?
            })),
        }
    };
    let dout = contiguous(0)?.unwrap_or_else(|| vec![zero::<T>(); out.size()]);
    let dhy = if cfg.state_outputs { contiguous(1)? } else { None };
    let dcy = if vis == 3 { contiguous(2)? } else { None };
    let c0 = if cfg.mode == Mode::Lstm { Some(input(3)?.as_slice::<T>()?) } else { None };
    let back = Backward {
        cfg,
        dims,
        data: input(0)?.as_slice::<T>()?,
        params: input(1)?.as_slice::<T>()?,
        h0: input(2)?.as_slice::<T>()?,
        c0,
        lens: lens.as_deref(),
        out: out.as_slice::<T>()?,
        work: work.as_slice::<T>()?,
    };
    let mut ddata = vec![zero::<T>(); input(0)?.size()];
    let mut dparams = vec![zero::<T>(); input(1)?.size()];
    let mut dstate = vec![zero::<T>(); input(2)?.size()];
    let mut dcell = if cfg.mode == Mode::Lstm { vec![zero::<T>(); input(3)?.size()] } else { Vec::new() };
    back.run(
        &dout,
        dhy.as_deref(),
        dcy.as_deref(),
        Grads {
            data: &mut ddata,
            params: &mut dparams,
            state: &mut dstate,
            state_cell: (cfg.mode == Mode::Lstm).then_some(&mut dcell[..]),
        },
    )?;
    for (i, g) in [(0, &ddata), (1, &dparams), (2, &dstate), (3, &dcell)] {
        if i < 3 || cfg.mode == Mode::Lstm {
            oxnet_core::store::store_slice(ctx.req[i], grads[i].as_mut_slice::<T>()?, g);
        }
    }
    Ok(())
}
