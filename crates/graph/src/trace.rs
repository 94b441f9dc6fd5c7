//! Tracing imperative code into the graph IR.
//!
//! [`trace`] runs a closure on traced arrays (shape and dtype, no values;
//! see `oxnet_core::trace`): every operator it calls runs only its own
//! inference and becomes a graph node, and the closure's results become
//! the heads. The same machinery turns gradient rules into backward graphs
//! ([`crate::gradient`]).
//!
//! ```
//! use oxnet_core::{invoke1, DType};
//! use oxnet_graph::trace::trace;
//! let traced = trace(&[("x", &[2, 3], DType::F32)], |xs| {
//!     let y = invoke1("tanh", &[&xs[0]], &[])?;
//!     Ok(vec![invoke1("sum", &[&y], &[("axis", 1.into())])?])
//! })
//! .unwrap();
//! assert_eq!(traced.symbol.list_arguments().unwrap(), ["x"]);
//! assert_eq!(traced.symbol.list_outputs().unwrap(), ["sum0_output"]);
//! ```

use crate::node::{Entry, Node, OpCall};
use crate::symbol::Symbol;
use oxnet_core::registry::Op;
use oxnet_core::{AttrValue, Attrs, DType, Device, Error, NDArray, Result, Shape};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::Arc;

/// The result of a trace: a symbol whose variables are the traced inputs
/// (by the names given) and the constants the code captured.
pub struct Traced {
    /// The graph; its heads are the closure's results.
    pub symbol: Symbol,
    /// Real arrays the traced code used, as variables `_const<k>` with their values.
    pub constants: Vec<(String, NDArray)>,
}

/// What a trace knows: which graph entry each traced array stands for.
pub(crate) struct Tracer {
    /// By storage address: the entry, and the traced array's layout.
    entries: HashMap<usize, (Entry, NDArray)>,
    constants: Vec<(NDArray, Entry, String)>,
    counters: HashMap<String, usize>,
}

fn storage_key(a: &NDArray) -> usize {
    Arc::as_ptr(a.storage()) as usize
}

fn same_layout(a: &NDArray, b: &NDArray) -> bool {
    a.shape() == b.shape() && a.strides() == b.strides() && a.offset() == b.offset()
}

impl Tracer {
    pub(crate) fn new() -> Tracer {
        Tracer { entries: HashMap::new(), constants: Vec::new(), counters: HashMap::new() }
    }

    /// A node name unique within this trace.
    pub(crate) fn fresh_name(&mut self, hint: &str) -> String {
        let hint = hint.to_lowercase();
        let n = self.counters.entry(hint.clone()).or_insert(0);
        let name = format!("{hint}{n}");
        *n += 1;
        name
    }

    /// Declares that traced array `a` stands for `entry`.
    pub(crate) fn bind(&mut self, a: &NDArray, entry: Entry) {
        self.entries.insert(storage_key(a), (entry, a.clone()));
    }

    /// The entry a (traced or real) array stands for. A real array becomes
    /// a constant; a contiguous view of a traced array made outside the
    /// operators becomes a `reshape` node.
    pub(crate) fn entry_of(&mut self, a: &NDArray) -> Result<Entry> {
        if let Some((e, known)) = self.entries.get(&storage_key(a)) {
            if same_layout(a, known) {
                return Ok(e.clone());
            }
            let (e, known) = (e.clone(), known.clone());
            if a.is_contiguous()
                && known.is_contiguous()
                && a.offset() == known.offset()
                && a.size() == known.size()
            {
                let shape: Vec<i64> = a.shape().iter().map(|&d| d as i64).collect();
                let op = oxnet_core::registry::get("reshape")?;
                let attrs = op.parse_attrs(&[("shape", AttrValue::Ints(shape))])?;
                let out = self.add_node(
                    &op,
                    &attrs,
                    vec![e],
                    &[(Shape::from_slice(a.shape()), a.dtype())],
                    a.device(),
                )?;
                return self.entry_of(&out[0]);
            }
            return Err(Error::Invalid(
                "a view of a traced array was made outside the operators (strided or offset); use the \
                 reshape/transpose/slice operators in code that is traced"
                    .into(),
            ));
        }
        if a.is_meta() {
            return Err(Error::Invalid("a traced array from another trace was used in this one".into()));
        }
        if let Some((_, e, _)) = self.constants.iter().find(|(c, _, _)| c.same_handle(a)) {
            return Ok(e.clone());
        }
        let name = format!("_const{}", self.constants.len());
        let mut attrs = BTreeMap::new();
        attrs.insert("__shape__".to_string(), crate::symbol::shape_string(a.shape()));
        attrs.insert("__dtype__".to_string(), (a.dtype() as i32).to_string());
        let e = Entry { node: Node::variable(&name, attrs), index: 0 };
        self.constants.push((a.clone(), e.clone(), name));
        Ok(e)
    }

    /// Adds an operator node reading `inputs` and returns traced arrays for
    /// its outputs (of the given shapes and dtypes).
    pub(crate) fn add_node(
        &mut self,
        op: &Op,
        attrs: &Attrs,
        inputs: Vec<Entry>,
        outputs: &[(Shape, DType)],
        device: Device,
    ) -> Result<Vec<NDArray>> {
        let name = self.fresh_name(&op.name);
        let call = OpCall { op: op.clone(), params: attrs.to_strings(), attrs: attrs.clone() };
        let node = Node::operator(&name, call, inputs, BTreeMap::new());
        let mut arrays = Vec::with_capacity(outputs.len());
        for (index, (s, d)) in outputs.iter().enumerate() {
            let a = NDArray::meta(s, *d, device);
            self.bind(&a, Entry { node: node.clone(), index });
            arrays.push(a);
        }
        Ok(arrays)
    }

    /// Records a call the dispatcher made while tracing (its outputs are
    /// already traced arrays).
    fn record(&mut self, op: &Op, attrs: &Attrs, inputs: &[NDArray], outputs: &[NDArray]) -> Result<()> {
        let inputs = inputs.iter().map(|x| self.entry_of(x)).collect::<Result<Vec<_>>>()?;
        let name = self.fresh_name(&op.name);
        let call = OpCall { op: op.clone(), params: attrs.to_strings(), attrs: attrs.clone() };
        let node = Node::operator(&name, call, inputs, BTreeMap::new());
        for (index, o) in outputs.iter().enumerate() {
            self.bind(o, Entry { node: node.clone(), index });
        }
        Ok(())
    }

    /// The constants captured so far, with their variable names.
    pub(crate) fn constants(&self) -> Vec<(String, NDArray)> {
        self.constants.iter().map(|(a, _, n)| (n.clone(), a.clone())).collect()
    }

    /// The constants captured so far, with their variable entries.
    pub(crate) fn constant_entries(&self) -> Vec<(Entry, NDArray)> {
        self.constants.iter().map(|(a, e, _)| (e.clone(), a.clone())).collect()
    }
}

/// Runs `f` with `tracer` receiving every operator call made on this thread.
pub(crate) fn run_traced<R>(tracer: &Rc<RefCell<Tracer>>, f: impl FnOnce() -> Result<R>) -> Result<R> {
    let sink_tracer = tracer.clone();
    let _guard = oxnet_core::trace::start(Box::new(move |op, attrs, inputs, outputs| {
        sink_tracer.borrow_mut().record(op, attrs, inputs, outputs)
    }));
    f()
}

/// Traces `f` on traced inputs named and shaped as `inputs` (on the CPU);
/// its results become the symbol's heads.
pub fn trace(
    inputs: &[(&str, &[usize], DType)],
    f: impl FnOnce(&[NDArray]) -> Result<Vec<NDArray>>,
) -> Result<Traced> {
    let tracer = Rc::new(RefCell::new(Tracer::new()));
    let mut arrays = Vec::with_capacity(inputs.len());
    for (name, shape, dtype) in inputs {
        let mut attrs = BTreeMap::new();
        attrs.insert("__shape__".to_string(), crate::symbol::shape_string(shape));
        attrs.insert("__dtype__".to_string(), (*dtype as i32).to_string());
        let a = NDArray::meta(shape, *dtype, Device::Cpu);
        tracer.borrow_mut().bind(&a, Entry { node: Node::variable(name, attrs), index: 0 });
        arrays.push(a);
    }
    let outputs = run_traced(&tracer, || f(&arrays))?;
    if outputs.is_empty() {
        return Err(Error::Invalid("the traced function returned no arrays".into()));
    }
    let mut t = tracer.borrow_mut();
    let heads = outputs.iter().map(|o| t.entry_of(o)).collect::<Result<Vec<_>>>()?;
    Ok(Traced { symbol: Symbol::from_entries(heads), constants: t.constants() })
}
