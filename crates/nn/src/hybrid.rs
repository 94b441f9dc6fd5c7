//! [`Hybridized`]: a block run as one cached graph (Gluon's
//! `hybridize()`), traced from its own `forward`.
//!
//! On a call with inputs of a shape and dtype not seen before, the block's
//! `forward` is traced ([`oxnet_graph::trace`]) with the data and every
//! parameter as graph inputs: while tracing, [`Parameter::data`] hands out
//! the traced input standing for the parameter ([`ParameterScope`]). The
//! graph becomes a [`CachedGraph`], which runs over planned buffers and
//! appears to autograd as one operator, so gradients reach the parameters
//! exactly as in imperative mode.
//!
//! Parameters whose shape is still unknown (deferred initialisation) get
//! it on the first call: `forward` first runs on shape-only arrays, where
//! layers fill their parameters' shapes from their inputs; then the
//! parameters are initialised and the real trace follows.
//!
//! ```
//! use oxnet_core::{autograd, NDArray};
//! use oxnet_nn::block::Block;
//! use oxnet_nn::layers::Dense;
//! use oxnet_nn::parameter::shared_init;
//! use oxnet_nn::init::One;
//!
//! let net = Dense::new(2).hybridize();
//! net.initialize(&shared_init(One)).unwrap();
//! let x = NDArray::from_vec(vec![1.0f32, 2.0, 3.0], &[1, 3]).unwrap();
//! let y = {
//!     let _r = autograd::record();
//!     net.call(&x).unwrap()
//! };
//! y.backward().unwrap();
//! // weight (2, 3) inferred from the input; bias zeros (its own initializer)
//! assert_eq!(y.to_vec::<f32>().unwrap(), vec![6.0, 6.0]);
//! let w = net.collect_params().unwrap().iter().next().unwrap().clone();
//! assert_eq!(w.grad().unwrap().to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
//! ```

use crate::block::Block;
use crate::collection::ParameterCollection;
use crate::io::{self, ParamList};
use crate::parameter::{Parameter, ParameterScope};
use oxnet_core::{DType, Device, Error, NDArray, Result};
use oxnet_graph::CachedGraph;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// What feeds one input of the cached graph.
enum Source {
    /// The call's input at this index.
    Data(usize),
    /// A parameter's data.
    Param(Parameter),
    /// An array the traced code captured.
    Const(NDArray),
}

/// A traced graph and how to feed it.
struct Cached {
    graph: CachedGraph,
    sources: Vec<Source>,
}

/// Shapes and dtypes of the inputs.
type Key = Vec<(Vec<usize>, DType)>;

/// A block whose calls run one cached graph traced from its `forward`.
pub struct Hybridized<B: Block> {
    block: B,
    cache: Mutex<HashMap<Key, Arc<Cached>>>,
    last: Mutex<Option<Arc<Cached>>>,
}

impl<B: Block> Hybridized<B> {
    /// Wraps `block` (see [`Block::hybridize`]).
    pub fn new(block: B) -> Hybridized<B> {
        Hybridized { block, cache: Mutex::new(HashMap::new()), last: Mutex::new(None) }
    }

    /// The wrapped block.
    pub fn inner(&self) -> &B {
        &self.block
    }

    /// The wrapped block, back in imperative mode.
    pub fn into_inner(self) -> B {
        self.block
    }

    /// Forgets the traced graphs (the next call traces again), as after a
    /// change to the block's structure.
    pub fn clear_cache(&self) {
        lock(&self.cache).clear();
        *lock(&self.last) = None;
    }

    /// How many graphs are cached (one per input signature).
    pub fn cached_graphs(&self) -> usize {
        lock(&self.cache).len()
    }

    /// The graph of the latest call, if any (its inputs are `data` or
    /// `data0`, `data1`, ..., then the parameters by full name).
    pub fn symbol(&self) -> Option<oxnet_graph::Symbol> {
        lock(&self.last).as_ref().map(|c| c.graph.symbol().clone())
    }

    /// Writes `{path}-symbol.json` and `{path}-{epoch:04}.params` (keys
    /// `arg:<name>`/`aux:<name>`), as MXNet's `HybridBlock.export`; the block
    /// must have run once. Returns the two paths.
    pub fn export(&self, path: &str, epoch: usize) -> Result<(PathBuf, PathBuf)> {
        let cached = lock(&self.last).clone().ok_or_else(|| {
            Error::Invalid(format!(
                "block `{}`: run it once after hybridize() before exporting it",
                self.block.name()
            ))
        })?;
        let symbol = cached.graph.symbol();
        let aux = symbol.list_auxiliary_states()?;
        let mut named = Vec::new();
        for (name, source) in cached.graph.input_names().iter().zip(&cached.sources) {
            let value = match source {
                Source::Data(_) => continue,
                Source::Param(p) => p.data()?.copy()?,
                Source::Const(c) => c.copy()?,
            };
            let kind = if aux.contains(name) { "aux" } else { "arg" };
            named.push((format!("{kind}:{name}"), value));
        }
        let sym_path = PathBuf::from(format!("{path}-symbol.json"));
        let params_path = PathBuf::from(format!("{path}-{epoch:04}.params"));
        oxnet_graph::json::save(symbol, &sym_path)?;
        io::save(&params_path, &ParamList::Named(named))?;
        Ok((sym_path, params_path))
    }

    /// Fills unknown parameter shapes by running `forward` on shape-only
    /// arrays, then runs the deferred initialisations.
    fn infer_deferred(&self, inputs: &[NDArray], params: &ParameterCollection) -> Result<()> {
        if params.iter().any(Parameter::is_deferred) {
            let metas: Vec<NDArray> =
                inputs.iter().map(|x| NDArray::meta(x.shape(), x.dtype(), Device::Cpu)).collect();
            let _trace = oxnet_core::trace::start(Box::new(|_, _, _, _| Ok(())));
            let _scope = ParameterScope::shapes_only();
            self.block.forward(&metas).map_err(|e| {
                Error::Invalid(format!(
                    "block `{}`: deferred initialization failed because the parameter shapes cannot be \
                     inferred from the inputs: {e}",
                    self.block.name()
                ))
            })?;
        }
        params.iter().try_for_each(Parameter::finish_deferred_init)
    }

    /// Traces `forward` for inputs like `inputs` into a cached graph.
    fn build(&self, inputs: &[NDArray], params: &ParameterCollection) -> Result<Cached> {
        let data_names: Vec<String> = if inputs.len() == 1 {
            vec!["data".to_string()]
        } else {
            (0..inputs.len()).map(|i| format!("data{i}")).collect()
        };
        let mut shapes = Vec::new();
        for p in params {
            if data_names.iter().any(|d| d == p.name()) {
                return Err(Error::Invalid(format!(
                    "block `{}`: Parameter `{}` has the name of a data input; rename it",
                    self.block.name(),
                    p.name()
                )));
            }
            shapes.push((p.shape(), p.dtype()));
        }
        let mut specs: Vec<(&str, &[usize], DType)> =
            data_names.iter().zip(inputs).map(|(n, x)| (n.as_str(), x.shape(), x.dtype())).collect();
        specs.extend(params.iter().zip(&shapes).map(|(p, (s, d))| (p.name(), s.as_slice(), *d)));
        let n = inputs.len();
        let traced = oxnet_graph::trace::trace(&specs, |arrays| {
            let mapping: Vec<(Parameter, NDArray)> =
                params.iter().cloned().zip(arrays[n..].iter().cloned()).collect();
            let _scope = ParameterScope::traced(&mapping);
            self.block.forward(&arrays[..n])
        })?;
        let graph = CachedGraph::new(&traced.symbol)?;
        let mut sources = Vec::with_capacity(graph.input_names().len());
        for name in graph.input_names() {
            let source = if let Some(i) = data_names.iter().position(|d| d == name) {
                Source::Data(i)
            } else if let Some(p) = params.get(name) {
                Source::Param(p.clone())
            } else if let Some((_, c)) = traced.constants.iter().find(|(k, _)| k == name) {
                Source::Const(c.clone())
            } else {
                return Err(Error::Invalid(format!(
                    "block `{}`: the traced graph has an input `{name}` that is neither data nor a parameter",
                    self.block.name()
                )));
            };
            sources.push(source);
        }
        Ok(Cached { graph, sources })
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<B: Block> Block for Hybridized<B> {
    fn prefix(&self) -> &str {
        self.block.prefix()
    }

    fn params(&self) -> Vec<(String, Parameter)> {
        self.block.params()
    }

    fn children(&self) -> Vec<(String, &dyn Block)> {
        self.block.children()
    }

    /// Runs the cached graph for these inputs (tracing it on the first
    /// call with their shapes). Inside another trace, the block's own
    /// `forward` joins that trace instead.
    fn forward(&self, inputs: &[NDArray]) -> Result<Vec<NDArray>> {
        if oxnet_core::trace::is_tracing() {
            return self.block.forward(inputs);
        }
        if inputs.is_empty() {
            return Err(Error::Invalid(format!("block `{}` was called without inputs", self.block.name())));
        }
        let key: Key = inputs.iter().map(|x| (x.shape().to_vec(), x.dtype())).collect();
        let found = lock(&self.cache).get(&key).cloned();
        let cached = match found {
            Some(c) => c,
            None => {
                let params = self.block.collect_params()?;
                self.infer_deferred(inputs, &params)?;
                let built = Arc::new(self.build(inputs, &params)?);
                lock(&self.cache).insert(key, built.clone());
                built
            }
        };
        *lock(&self.last) = Some(cached.clone());
        let mut args = Vec::with_capacity(cached.sources.len());
        for s in &cached.sources {
            args.push(match s {
                Source::Data(i) => inputs[*i].clone(),
                Source::Param(p) => p.data()?,
                Source::Const(c) => c.clone(),
            });
        }
        let refs: Vec<&NDArray> = args.iter().collect();
        cached.graph.call(&refs)
    }
}

impl<B: Block> std::fmt::Debug for Hybridized<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Hybridized({})", self.block.name())
    }
}
