//! Turns a library's operator descriptor into an [`OpDef`] whose callbacks
//! call through the ABI.

use crate::call::CallScope;
use crate::convert::{dtype_code, dtype_of_code, shape_from_abi, shape_to_abi, CAttrs, Tensors};
use crate::host::checked;
use crate::infer_cache;
use crate::loader::LibraryCode;
use oxnet_abi as abi;
use oxnet_core::op::{BackwardArgs, BackwardDeps, OpContext, OpState};
use oxnet_core::{Attrs, DType, Device, Error, NDArray, OpDef, Req, Result, Shape};
use smallvec::SmallVec;
use std::ffi::c_void;
use std::sync::Arc;

/// Most inputs or outputs a library operator may declare.
const MAX_ARITY: i32 = 1 << 16;

/// One operator of a loaded library: its descriptor and the library it lives in.
pub(crate) struct LoadedOp {
    /// The registered name.
    pub name: String,
    /// The path of its library (for messages).
    pub library: String,
    /// The descriptor (copied from the library's table).
    pub desc: abi::Op,
    /// Keeps the code the descriptor points to loaded.
    pub _code: Arc<LibraryCode>,
}

// SAFETY: the descriptor's pointers are the library's immutable table and
// its user data, which the ABI requires to be usable from any thread.
unsafe impl Send for LoadedOp {}
unsafe impl Sync for LoadedOp {}

impl LoadedOp {
    fn user(&self) -> *mut c_void {
        self.desc.user_data
    }
}

/// What `prepare` derives once per call: the attributes in C form, the arity,
/// the mutated inputs.
struct Prepared {
    pairs: Vec<(String, String)>,
    cattrs: CAttrs,
    num_in: usize,
    num_out: usize,
    mutated: Vec<usize>,
}

fn prepared(attrs: &Attrs) -> Result<&Prepared> {
    attrs
        .prepared::<Prepared>()
        .ok_or_else(|| Error::Invalid("library operator: attributes were not prepared".into()))
}

fn prepare(op: &LoadedOp, attrs: &Attrs) -> Result<Prepared> {
    let pairs = attrs.to_strings();
    let cattrs = CAttrs::new(&pairs)?;
    let parse = op.desc.parse_attrs.ok_or_else(|| Error::Invalid("no parse_attrs".into()))?;
    let (mut ni, mut no) = (-1i32, -1i32);
    checked("parse_attrs", |err| unsafe { parse(op.user(), &cattrs.abi(), &mut ni, &mut no, err) })?;
    if !(0..=MAX_ARITY).contains(&ni) || !(0..=MAX_ARITY).contains(&no) {
        return Err(Error::Invalid(format!("parse_attrs gave {ni} inputs and {no} outputs")));
    }
    let (num_in, num_out) = (ni as usize, no as usize);
    let mut mutated = Vec::new();
    if let Some(m) = op.desc.mutate_inputs {
        let mut idx = vec![0i32; num_in];
        let mut count = 0i32;
        checked("mutate_inputs", |err| unsafe {
            m(op.user(), &cattrs.abi(), idx.as_mut_ptr(), ni, &mut count, err)
        })?;
        if !(0..=ni).contains(&count) {
            return Err(Error::Invalid(format!("mutate_inputs gave {count} indices for {ni} inputs")));
        }
        for &i in &idx[..count as usize] {
            if !(0..ni).contains(&i) {
                return Err(Error::Invalid(format!("mutate_inputs gave index {i}; there are {ni} inputs")));
            }
            mutated.push(i as usize);
        }
    }
    Ok(Prepared { pairs, cattrs, num_in, num_out, mutated })
}

fn infer_type(
    op: &LoadedOp,
    attrs: &Attrs,
    ins: &mut [Option<DType>],
    outs: &mut [Option<DType>],
) -> Result<()> {
    let p = prepared(attrs)?;
    let key = op as *const LoadedOp as usize;
    infer_cache::cached(&infer_cache::TYPES, key, &p.pairs, ins, outs, |ins, outs| {
        infer_type_uncached(op, p, ins, outs)
    })
}

fn infer_type_uncached(
    op: &LoadedOp,
    p: &Prepared,
    ins: &mut [Option<DType>],
    outs: &mut [Option<DType>],
) -> Result<()> {
    let f = op.desc.infer_type.ok_or_else(|| Error::Invalid("no infer_type".into()))?;
    let mut it: SmallVec<[i32; 4]> =
        ins.iter().map(|d| d.map(dtype_code).unwrap_or(abi::DTYPE_UNKNOWN)).collect();
    let mut ot: SmallVec<[i32; 4]> =
        outs.iter().map(|d| d.map(dtype_code).unwrap_or(abi::DTYPE_UNKNOWN)).collect();
    checked("infer_type", |err| unsafe {
        f(op.user(), &p.cattrs.abi(), it.as_mut_ptr(), it.len() as i32, ot.as_mut_ptr(), ot.len() as i32, err)
    })
    .map_err(|e| Error::DType(e.to_string()))?;
    for (i, (slot, &code)) in ins.iter_mut().zip(&it).enumerate() {
        if code != abi::DTYPE_UNKNOWN {
            let d = dtype_of_code(code).ok_or_else(|| {
                Error::DType(format!("infer_type gave input {i} the unknown dtype code {code}"))
            })?;
            *slot = Some(d);
        }
    }
    for (i, (slot, &code)) in outs.iter_mut().zip(&ot).enumerate() {
        let d = dtype_of_code(code).ok_or_else(|| {
            Error::DType(if code == abi::DTYPE_UNKNOWN {
                format!("infer_type left the dtype of output {i} unknown")
            } else {
                format!("infer_type gave output {i} the unknown dtype code {code}")
            })
        })?;
        *slot = Some(d);
    }
    Ok(())
}

fn infer_shape(
    op: &LoadedOp,
    attrs: &Attrs,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let p = prepared(attrs)?;
    let key = op as *const LoadedOp as usize;
    infer_cache::cached(&infer_cache::SHAPES, key, &p.pairs, ins, outs, |ins, outs| {
        infer_shape_uncached(op, p, ins, outs)
    })
}

fn infer_shape_uncached(
    op: &LoadedOp,
    p: &Prepared,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let f = op.desc.infer_shape.ok_or_else(|| Error::Invalid("no infer_shape".into()))?;
    let mut is: SmallVec<[abi::Shape; 3]> =
        ins.iter().map(|s| shape_to_abi(&op.name, s)).collect::<Result<_>>()?;
    let mut os: SmallVec<[abi::Shape; 2]> =
        outs.iter().map(|s| shape_to_abi(&op.name, s)).collect::<Result<_>>()?;
    checked("infer_shape", |err| unsafe {
        f(op.user(), &p.cattrs.abi(), is.as_mut_ptr(), is.len() as i32, os.as_mut_ptr(), os.len() as i32, err)
    })
    .map_err(|e| Error::Shape(e.to_string()))?;
    for (i, (slot, s)) in ins.iter_mut().zip(&is).enumerate() {
        if let Some(s) = shape_from_abi(&format!("infer_shape, input {i}"), s)? {
            *slot = Some(s);
        }
    }
    for (i, (slot, s)) in outs.iter_mut().zip(&os).enumerate() {
        let what = format!("infer_shape, output {i}");
        *slot = Some(
            shape_from_abi(&what, s)?
                .ok_or_else(|| Error::Shape(format!("infer_shape left the shape of output {i} unknown")))?,
        );
    }
    Ok(())
}

/// The state object of one stateful operator instance; destroyed with it.
struct LoadedState {
    raw: abi::State,
    _op: Arc<LoadedOp>,
}

// SAFETY: the ABI requires state objects to be usable from the thread that
// runs the instance; oxnet runs one call of an instance at a time.
unsafe impl Send for LoadedState {}
unsafe impl Sync for LoadedState {}

impl Drop for LoadedState {
    fn drop(&mut self) {
        if let Some(destroy) = self.raw.destroy {
            // SAFETY: called once, with the library's own pointer.
            unsafe { destroy(self.raw.state) };
        }
    }
}

/// The ABI kernel slot of a device.
fn slot_of(device: Device) -> usize {
    match device {
        Device::Gpu(_) => abi::SLOT_GPU,
        _ => abi::SLOT_CPU,
    }
}

fn create_state(
    op: &Arc<LoadedOp>,
    attrs: &Attrs,
    shapes: &[Shape],
    dtypes: &[DType],
    device: Device,
) -> Result<OpState> {
    let p = prepared(attrs)?;
    let f = op.desc.create_state[slot_of(device)]
        .ok_or_else(|| Error::Device(format!("`{}` has no state constructor for {device}", op.name)))?;
    let is: SmallVec<[abi::Shape; 3]> =
        shapes.iter().map(|s| shape_to_abi(&op.name, &Some(s.clone()))).collect::<Result<_>>()?;
    let it: SmallVec<[i32; 4]> = dtypes.iter().map(|d| dtype_code(*d)).collect();
    let mut raw = abi::State { state: std::ptr::null_mut(), forward: None, backward: None, destroy: None };
    checked("create_state", |err| unsafe {
        f(
            op.user(),
            &p.cattrs.abi(),
            crate::call::dl_device(device),
            is.as_ptr(),
            it.as_ptr(),
            is.len() as i32,
            &mut raw,
            err,
        )
    })?;
    let state = LoadedState { raw, _op: op.clone() };
    if state.raw.forward.is_none() {
        return Err(Error::Invalid("create_state returned a state without a forward function".into()));
    }
    Ok(Arc::new(state))
}

/// Calls a stateless or stateful kernel of `op`, for `ctx.device`.
///
/// GPU kernels see only write requests: an output with request `add` or
/// `null` gets a device temporary, and `add` outputs have it added in
/// afterwards on the device (MXNet's kernels never took requests, and the
/// headers' own `add` emulation works on host memory only).
fn run_kernel(
    op: &LoadedOp,
    ctx: &OpContext,
    backward: bool,
    inputs: &mut Tensors,
    outputs: &[NDArray],
) -> Result<()> {
    let p = prepared(ctx.attrs)?;
    let on_gpu = !ctx.device.is_host();
    let mut temps: SmallVec<[(usize, NDArray); 1]> = SmallVec::new();
    let mut targets: SmallVec<[NDArray; 2]> = SmallVec::new();
    let mut reqs: SmallVec<[Req; 2]> = SmallVec::from_slice(ctx.req);
    if on_gpu {
        for (i, (o, r)) in outputs.iter().zip(ctx.req).enumerate() {
            if matches!(r, Req::Add | Req::Null) {
                let t = NDArray::empty(o.shape(), o.dtype(), ctx.device)?;
                targets.push(t.clone());
                temps.push((i, t));
                reqs[i] = Req::Write;
            } else {
                targets.push(o.clone());
            }
        }
    }
    let targets: &[NDArray] = if temps.is_empty() { outputs } else { &targets };
    let mut outs = Tensors::new(targets.iter());
    let req: SmallVec<[i32; 4]> = reqs.iter().map(|r| req_code(*r)).collect();
    let scope = CallScope::new(ctx.device);
    let res = scope.resource(ctx.is_train)?;
    let what = if backward { "backward" } else { "forward" };
    let state = ctx.state.and_then(|s| s.downcast_ref::<LoadedState>());
    let (ip, ni) = (inputs.as_ptr(), inputs.len());
    let (op_, no) = (outs.as_ptr(), outs.len());
    match state {
        Some(st) => {
            let f = if backward { st.raw.backward } else { st.raw.forward };
            let f =
                f.ok_or_else(|| Error::Invalid(format!("the operator's state has no {what} function")))?;
            checked(what, |err| unsafe { f(st.raw.state, ip, ni, op_, no, req.as_ptr(), &res, err) })?;
        }
        None => {
            let slot = if backward { op.desc.backward } else { op.desc.forward };
            let f = slot[slot_of(ctx.device)].ok_or_else(|| {
                Error::Invalid(format!("the operator has no {what} kernel for {}", ctx.device))
            })?;
            checked(what, |err| unsafe {
                f(op.user(), &p.cattrs.abi(), ip, ni, op_, no, req.as_ptr(), &res, err)
            })?;
        }
    }
    for (i, t) in &temps {
        if ctx.req[*i] == Req::Add {
            add_on_device(&outputs[*i], t, ctx.device)?;
        }
    }
    Ok(())
}

/// `dst += src` on `device`, by the `_copy` kernel with request `add`.
fn add_on_device(dst: &NDArray, src: &NDArray, device: Device) -> Result<()> {
    let copy = oxnet_core::registry::get("_copy")?;
    let kernel = copy.kernel_for(device)?;
    let attrs = Attrs::default();
    let ctx =
        OpContext { op_name: "_copy", attrs: &attrs, req: &[Req::Add], is_train: false, device, state: None };
    kernel(&ctx, std::slice::from_ref(src), std::slice::from_ref(dst))
}

/// The ABI code of a request.
fn req_code(r: oxnet_core::Req) -> i32 {
    match r {
        oxnet_core::Req::Null => abi::REQ_NULL,
        oxnet_core::Req::Write => abi::REQ_WRITE,
        oxnet_core::Req::Inplace => abi::REQ_INPLACE,
        oxnet_core::Req::Add => abi::REQ_ADD,
    }
}

fn forward(op: &LoadedOp, ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let mut ins = Tensors::new(inputs.iter());
    run_kernel(op, ctx, false, &mut ins, outputs)
}

fn backward(op: &LoadedOp, ctx: &OpContext, args: &BackwardArgs, in_grads: &[NDArray]) -> Result<()> {
    let all: Vec<&NDArray> = args
        .out_grads
        .iter()
        .chain(args.inputs)
        .chain(args.outputs)
        .map(|a| a.as_ref().ok_or_else(|| Error::Invalid("backward is missing a saved array".into())))
        .collect::<Result<_>>()?;
    let mut ins = Tensors::new(all.into_iter());
    run_kernel(op, ctx, true, &mut ins, in_grads)
}

/// The operator definition registered for `op`.
pub(crate) fn op_def(op: Arc<LoadedOp>) -> OpDef {
    let d = op.desc;
    let stateful = d.create_state[abi::SLOT_CPU].is_some();
    let stateful_gpu = d.create_state[abi::SLOT_GPU].is_some();
    let mut def = OpDef::new(&op.name)
        .doc(&format!("Operator `{}` loaded from the extension library {}.", op.name, op.library))
        .allow_extra_attrs()
        .aux_states(&[]);
    let o = op.clone();
    def = def
        .prepare(move |a| Ok(Arc::new(prepare(&o, a)?)))
        .arguments_fn(|a| Ok((0..prepared(a)?.num_in).map(|i| format!("input{i}")).collect()))
        .outputs_fn(|a| Ok((0..prepared(a)?.num_out).map(|i| format!("output{i}")).collect()))
        .arity_fn(|a| {
            let p = prepared(a)?;
            Ok([p.num_in, 0, p.num_out])
        })
        .mutate_inputs(|a| prepared(a).map(|p| p.mutated.clone()).unwrap_or_default());
    let o = op.clone();
    def = def.infer_type(move |a, i, out| infer_type(&o, a, i, out));
    let o = op.clone();
    def = def.infer_shape(move |a, i, out| infer_shape(&o, a, i, out));
    if stateful || d.forward[abi::SLOT_CPU].is_some() {
        let o = op.clone();
        def = def.forward(move |ctx, i, out| forward(&o, ctx, i, out));
    }
    // GPU kernels (`setForward(f, "gpu")`) get device pointers and the
    // device's stream; an operator without them runs on host copies there
    if stateful_gpu || d.forward[abi::SLOT_GPU].is_some() {
        let o = op.clone();
        def = def.forward_on(Device::Gpu(0), move |ctx, i, out| forward(&o, ctx, i, out));
    }
    if stateful || stateful_gpu {
        let o = op.clone();
        def = def.create_state(move |a, s, t, dev: Device| create_state(&o, a, s, t, dev));
    }
    if stateful_gpu || d.backward[abi::SLOT_GPU].is_some() {
        def = def.backward_runs_on_gpu();
    }
    if stateful || stateful_gpu || d.backward[abi::SLOT_CPU].is_some() || d.backward[abi::SLOT_GPU].is_some()
    {
        let o = op.clone();
        def = def.backward(
            |a| {
                let (n_in, n_out) = prepared(a).map(|p| (p.num_in, p.num_out)).unwrap_or((0, 0));
                BackwardDeps {
                    out_grads: (0..n_out).collect(),
                    inputs: (0..n_in).collect(),
                    outputs: (0..n_out).collect(),
                }
            },
            move |ctx, args, g| backward(&o, ctx, args, g),
        );
    }
    def
}
