//! Registering custom-operator properties and the `Custom` operator that
//! runs them.

use super::prop::{CustomOp, CustomOpProp, Dependency};
use crate::dispatch::panic_message;
use crate::op::{BackwardDeps, OpContext, OpDef, OpState};
use crate::{autograd, AttrKind, AttrSpec, Attrs, DType, Device, Error, NDArray, Result, Shape};
use std::cell::RefCell;
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, RwLock};

/// Builds a property from the call's keyword arguments (all strings, as in
/// the reference).
pub type PropFactory = Arc<dyn Fn(&[(String, String)]) -> Result<Arc<dyn CustomOpProp>> + Send + Sync>;

static FACTORIES: RwLock<Option<HashMap<String, PropFactory>>> = RwLock::new(None);

/// A property instance for one set of keyword arguments, with the
/// operators it created, by (shapes, dtypes, device).
struct PropEntry {
    op_type: String,
    prop: Arc<dyn CustomOpProp>,
    args: Vec<String>,
    outputs: Vec<String>,
    aux: Vec<String>,
    operators: Mutex<HashMap<Signature, Arc<Instance>>>,
}

/// Input shapes, dtypes and device: what an operator instance is created for.
type Signature = (Vec<Shape>, Vec<DType>, Device);

/// One inference: input slots as given, then the inputs and outputs it filled.
type InferCache<T> = (Vec<Option<T>>, Vec<Option<T>>, Vec<Option<T>>);

/// This thread's last `Custom` call for one property: what it inferred and
/// which operator it ran. A repeated call (same property, same inputs) skips
/// the property's hooks and takes no lock. Holding the entry keeps its
/// address from being reused by another.
struct LastCall {
    entry: Arc<PropEntry>,
    shapes: Option<InferCache<Shape>>,
    types: Option<InferCache<DType>>,
    instance: Option<(Signature, Arc<Instance>)>,
}

thread_local! {
    static LAST_CALL: RefCell<Option<LastCall>> = const { RefCell::new(None) };
}

/// Runs `f` on this thread's last-call record for `entry` (a fresh one if the
/// last call was another property's). User hooks must not run inside `f`.
fn with_last_call<R>(entry: &Arc<PropEntry>, f: impl FnOnce(&mut LastCall) -> R) -> R {
    LAST_CALL.with(|cell| {
        let mut slot = cell.borrow_mut();
        match slot.as_mut() {
            Some(last) if Arc::ptr_eq(&last.entry, entry) => f(last),
            _ => f(slot.insert(LastCall { entry: entry.clone(), shapes: None, types: None, instance: None })),
        }
    })
}

/// Runs an inference, reusing this thread's last result for the same input
/// slots (properties are pure functions of their inputs).
fn cached_inference<T: Clone + PartialEq>(
    entry: &Arc<PropEntry>,
    cache: fn(&mut LastCall) -> &mut Option<InferCache<T>>,
    ins: &mut [Option<T>],
    outs: &mut [Option<T>],
    infer: impl FnOnce(&mut [Option<T>], &mut [Option<T>]) -> Result<()>,
) -> Result<()> {
    let hit = with_last_call(entry, |last| match cache(last) {
        Some((given, filled_in, filled_out)) if given.as_slice() == ins && filled_out.len() == outs.len() => {
            if filled_in != given {
                ins.clone_from_slice(filled_in);
            }
            outs.clone_from_slice(filled_out);
            true
        }
        _ => false,
    });
    if hit {
        return Ok(());
    }
    let given = ins.to_vec();
    infer(ins, outs)?;
    let result = (given, ins.to_vec(), outs.to_vec());
    with_last_call(entry, |last| *cache(last) = Some(result));
    Ok(())
}

/// More distinct shape signatures than this empties an entry's operator cache.
const MAX_CACHED_OPERATORS: usize = 256;

static PROPS: Mutex<Option<HashMap<String, Arc<PropEntry>>>> = Mutex::new(None);

/// The operator instance a call runs (the `Custom` op's state).
struct Instance {
    /// `Custom(op_type=...)`, for error messages.
    name: String,
    /// The registered name, for the profiler.
    op_type: String,
    n_args: usize,
    op: Arc<dyn CustomOp>,
}

/// Registers a property factory under `op_type`. Registering the same name
/// again replaces the old factory (with a warning) and drops cached
/// properties and operators of that name.
pub fn register(
    op_type: &str,
    factory: impl Fn(&[(String, String)]) -> Result<Arc<dyn CustomOpProp>> + Send + Sync + 'static,
) {
    let mut guard = FACTORIES.write().unwrap_or_else(|e| e.into_inner());
    let map = guard.get_or_insert_with(HashMap::new);
    if map.insert(op_type.to_string(), Arc::new(factory)).is_some() {
        eprintln!("oxnet warning: custom operator `{op_type}` was registered again; the new definition replaces the old one");
    }
    drop(guard);
    forget_props(op_type);
}

/// Removes a registered custom operator; returns whether it existed.
pub fn unregister(op_type: &str) -> bool {
    let mut guard = FACTORIES.write().unwrap_or_else(|e| e.into_inner());
    let existed = guard.as_mut().map(|m| m.remove(op_type).is_some()).unwrap_or(false);
    drop(guard);
    forget_props(op_type);
    existed
}

fn forget_props(op_type: &str) {
    if let Some(props) = PROPS.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        props.retain(|_, e| e.op_type != op_type);
    }
}

/// True if a custom operator is registered under `op_type`.
pub fn is_registered(op_type: &str) -> bool {
    FACTORIES.read().unwrap_or_else(|e| e.into_inner()).as_ref().is_some_and(|m| m.contains_key(op_type))
}

/// Names of all registered custom operators, sorted.
pub fn registered_names() -> Vec<String> {
    let guard = FACTORIES.read().unwrap_or_else(|e| e.into_inner());
    let mut names: Vec<String> = guard.as_ref().map(|m| m.keys().cloned().collect()).unwrap_or_default();
    names.sort();
    names
}

/// How many operators the property of `op_type` with these keyword
/// arguments has created so far (for tests of the reuse guarantee).
pub fn cached_operator_count(op_type: &str, kwargs: &[(&str, &str)]) -> usize {
    let key =
        prop_key(op_type, &kwargs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>());
    PROPS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .and_then(|m| m.get(&key).map(|e| e.operators.lock().unwrap_or_else(|e| e.into_inner()).len()))
        .unwrap_or(0)
}

fn prop_key(op_type: &str, kwargs: &[(String, String)]) -> String {
    let mut pairs: Vec<&(String, String)> = kwargs.iter().collect();
    pairs.sort();
    let mut key = op_type.to_string();
    for (k, v) in pairs {
        key.push('\u{1}');
        key.push_str(k);
        key.push('=');
        key.push_str(v);
    }
    key
}

/// The prop entry for these attributes, created on first use.
fn prop_entry(attrs: &Attrs) -> Result<Arc<PropEntry>> {
    let op_type = attrs.str("op_type")?.to_string();
    let kwargs = attrs.extra();
    let key = prop_key(&op_type, kwargs);
    if let Some(e) = PROPS.lock().unwrap_or_else(|e| e.into_inner()).as_ref().and_then(|m| m.get(&key)) {
        return Ok(e.clone());
    }
    let factory = FACTORIES
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .and_then(|m| m.get(&op_type).cloned())
        .ok_or_else(|| {
            Error::attr(
                "op_type",
                format!(
                    "no custom operator `{op_type}` is registered (registered: {})",
                    registered_names().join(", ")
                ),
            )
        })?;
    let name = format!("Custom(op_type={op_type})");
    let prop = guarded(&name, || factory(kwargs))?;
    let (args, outputs, aux) =
        guarded(&name, || Ok((prop.list_arguments(), prop.list_outputs(), prop.list_auxiliary_states())))?;
    let entry =
        Arc::new(PropEntry { op_type, prop, args, outputs, aux, operators: Mutex::new(HashMap::new()) });
    PROPS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(key, entry.clone());
    Ok(entry)
}

/// Runs user code, turning a panic into an error and naming the operator.
fn guarded<R>(name: &str, f: impl FnOnce() -> Result<R>) -> Result<R> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r.map_err(|e| e.in_op(name)),
        Err(p) => Err(Error::Panic(panic_message(p.as_ref())).in_op(name)),
    }
}

fn entry_of(attrs: &Attrs) -> Result<&Arc<PropEntry>> {
    attrs
        .prepared::<Arc<PropEntry>>()
        .ok_or_else(|| Error::Invalid("Custom: attributes were not prepared".into()))
}

fn name_of(entry: &PropEntry) -> String {
    format!("Custom(op_type={})", entry.op_type)
}

/// Turns recording off (keeping train mode) while user code runs: operators
/// called inside a custom op are not recorded, as in the reference.
struct NotRecording(bool);
impl NotRecording {
    fn new() -> Self {
        NotRecording(autograd::set_recording(false))
    }
}
impl Drop for NotRecording {
    fn drop(&mut self) {
        autograd::set_recording(self.0);
    }
}

fn infer_shape(attrs: &Attrs, ins: &mut [Option<Shape>], outs: &mut [Option<Shape>]) -> Result<()> {
    let entry = entry_of(attrs)?;
    cached_inference(entry, |l| &mut l.shapes, ins, outs, |ins, outs| infer_shape_uncached(entry, ins, outs))
}

fn infer_shape_uncached(
    entry: &PropEntry,
    ins: &mut [Option<Shape>],
    outs: &mut [Option<Shape>],
) -> Result<()> {
    let n_args = entry.args.len();
    // While a graph is inferred some arguments may be unknown: as in the
    // reference, the property sees them as empty shapes `()` and may fill
    // them (a label's shape from the data's); an empty shape it hands back
    // for an unknown slot leaves that slot unknown.
    let partial = ins[..n_args].iter().any(Option::is_none);
    if n_args > 0 && ins[..n_args].iter().all(Option::is_none) {
        return Err(Error::Shape("no argument shape is known".into()));
    }
    let given: Vec<Shape> = ins[..n_args].iter().map(|s| s.clone().unwrap_or_default()).collect();
    let (arg_s, out_s, aux_s) = guarded(&name_of(entry), || entry.prop.infer_shape(&given))?;
    if arg_s.len() != n_args || out_s.len() != outs.len() || aux_s.len() != ins.len() - n_args {
        return Err(Error::Shape(format!(
            "{}: infer_shape returned {} argument, {} output and {} aux shapes; expected {}, {} and {}",
            name_of(entry),
            arg_s.len(),
            out_s.len(),
            aux_s.len(),
            n_args,
            outs.len(),
            ins.len() - n_args
        )));
    }
    for (slot, s) in ins.iter_mut().zip(arg_s.into_iter().chain(aux_s)).chain(outs.iter_mut().zip(out_s)) {
        if !(partial && s.is_empty()) {
            *slot = Some(s);
        }
    }
    Ok(())
}

fn infer_type(attrs: &Attrs, ins: &mut [Option<DType>], outs: &mut [Option<DType>]) -> Result<()> {
    let entry = entry_of(attrs)?;
    cached_inference(entry, |l| &mut l.types, ins, outs, |ins, outs| infer_type_uncached(entry, ins, outs))
}

fn infer_type_uncached(
    entry: &PropEntry,
    ins: &mut [Option<DType>],
    outs: &mut [Option<DType>],
) -> Result<()> {
    let n_args = entry.args.len();
    let given: Vec<DType> = ins[..n_args].iter().map(|d| d.unwrap_or(DType::F32)).collect();
    let (arg_t, out_t, aux_t) = guarded(&name_of(entry), || entry.prop.infer_type(&given))?;
    if arg_t.len() != n_args || out_t.len() != outs.len() || aux_t.len() != ins.len() - n_args {
        return Err(Error::DType(format!(
            "{}: infer_type returned lists of the wrong lengths",
            name_of(entry)
        )));
    }
    for (slot, t) in ins.iter_mut().zip(arg_t.into_iter().chain(aux_t)) {
        *slot = Some(t);
    }
    for (slot, t) in outs.iter_mut().zip(out_t) {
        *slot = Some(t);
    }
    Ok(())
}

fn create_state(attrs: &Attrs, shapes: &[Shape], dtypes: &[DType], device: Device) -> Result<OpState> {
    let entry = entry_of(attrs)?;
    let last = with_last_call(entry, |last| match &last.instance {
        Some(((s, d, dev), inst)) if s.as_slice() == shapes && d.as_slice() == dtypes && *dev == device => {
            Some(inst.clone())
        }
        _ => None,
    });
    if let Some(inst) = last {
        return Ok(inst);
    }
    let key = (shapes.to_vec(), dtypes.to_vec(), device);
    let found = entry.operators.lock().unwrap_or_else(|e| e.into_inner()).get(&key).cloned();
    let inst = match found {
        Some(inst) => inst,
        None => {
            let n_args = entry.args.len();
            let name = name_of(entry);
            let op =
                guarded(&name, || entry.prop.create_operator(device, &shapes[..n_args], &dtypes[..n_args]))?;
            let inst = Arc::new(Instance { name, op_type: entry.op_type.clone(), n_args, op });
            let mut cache = entry.operators.lock().unwrap_or_else(|e| e.into_inner());
            if cache.len() >= MAX_CACHED_OPERATORS {
                cache.clear();
            }
            cache.insert(key.clone(), inst.clone());
            inst
        }
    };
    with_last_call(entry, |last| last.instance = Some((key, inst.clone())));
    Ok(inst)
}

fn instance(state: Option<&OpState>) -> Result<&Instance> {
    state
        .and_then(|s| s.downcast_ref::<Instance>())
        .ok_or_else(|| Error::Invalid("Custom: missing operator instance".into()))
}

fn backward_deps(attrs: &Attrs) -> BackwardDeps {
    let Ok(entry) = entry_of(attrs) else { return BackwardDeps::default() };
    let n_args = entry.args.len();
    let n_out = entry.outputs.len();
    let og: Vec<Dependency> = (0..n_out).map(Dependency::OutGrad).collect();
    let id: Vec<Dependency> = (0..n_args).map(Dependency::InData).collect();
    let od: Vec<Dependency> = (0..n_out).map(Dependency::OutData).collect();
    let declared = catch_unwind(AssertUnwindSafe(|| entry.prop.declare_backward_dependency(&og, &id, &od)))
        .unwrap_or_else(|_| [og.clone(), id.clone(), od.clone()].concat());
    let mut deps = BackwardDeps::default();
    for d in declared {
        match d {
            Dependency::OutGrad(i) => deps.out_grads.push(i),
            Dependency::InData(i) => deps.inputs.push(i),
            Dependency::OutData(i) => deps.outputs.push(i),
        }
    }
    // aux states are always available to backward, as in the reference
    deps.inputs.extend(n_args..n_args + entry.aux.len());
    deps
}

/// The `Custom` operator's definition (registered with the built-ins).
pub(crate) fn custom_op_def() -> OpDef {
    OpDef::new("Custom")
        .doc("Runs a custom operator registered with oxnet_core::custom::register (or oxnet.operator.register in Python). \
              `op_type` names it; every other keyword is passed to its property as a string.")
        .attr(AttrSpec::required("op_type", AttrKind::Str, "the registered name of the custom operator"))
        .allow_extra_attrs()
        .prepare(|attrs| Ok(Arc::new(prop_entry(attrs)?)))
        .arguments_fn(|a| Ok(entry_of(a)?.args.clone()))
        .outputs_fn(|a| Ok(entry_of(a)?.outputs.clone()))
        .aux_states_fn(|a| Ok(entry_of(a)?.aux.clone()))
        .arity_fn(|a| {
            let e = entry_of(a)?;
            Ok([e.args.len(), e.aux.len(), e.outputs.len()])
        })
        .mutate_inputs(|a| entry_of(a).map(|e| (e.args.len()..e.args.len() + e.aux.len()).collect()).unwrap_or_default())
        .infer_shape(infer_shape)
        .infer_type(infer_type)
        .create_state(create_state)
        // one kernel for every device: the operator sees the arrays where
        // they live (on a GPU, through __cuda_array_interface__ or copies)
        .forward(custom_forward)
        .forward_on(Device::Gpu(0), custom_forward)
        .backward_runs_on_gpu()
        .backward(backward_deps, |ctx, args, in_grads| {
            let inst = instance(ctx.state)?;
            let n_args = inst.n_args;
            let present = |x: &Option<NDArray>| -> Result<NDArray> {
                match x {
                    Some(a) => Ok(a.clone()),
                    None => NDArray::zeros(&[0], DType::F32, ctx.device),
                }
            };
            let out_grad: Vec<NDArray> = args.out_grads.iter().map(present).collect::<Result<_>>()?;
            let in_data: Vec<NDArray> = args.inputs[..n_args].iter().map(present).collect::<Result<_>>()?;
            let out_data: Vec<NDArray> = args.outputs.iter().map(present).collect::<Result<_>>()?;
            let aux: Vec<NDArray> = args.inputs[n_args..].iter().map(present).collect::<Result<_>>()?;
            let read: Vec<NDArray> = out_grad.iter().chain(&in_data).chain(&out_data).cloned().collect();
            let _read_only = crate::ndarray::protect_inputs(&read, in_grads);
            let _off = NotRecording::new();
            let _profiled = crate::profiler::custom_scope(&inst.op_type, inst.op.profiler_label(), true);
            guarded(&inst.name, || {
                inst.op.backward(&ctx.req[..n_args], &out_grad, &in_data, &out_data, &in_grads[..n_args], &aux)
            })
        })
}

/// The forward kernel of the `Custom` operator (every device).
fn custom_forward(ctx: &OpContext, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
    let inst = instance(ctx.state)?;
    let n_args = inst.n_args;
    let (in_data, aux) = inputs.split_at(n_args);
    let _read_only = crate::ndarray::protect_inputs(in_data, outputs);
    let _off = NotRecording::new();
    let _profiled = crate::profiler::custom_scope(&inst.op_type, inst.op.profiler_label(), false);
    guarded(&inst.name, || inst.op.forward(ctx.is_train, ctx.req, in_data, outputs, aux))
}
