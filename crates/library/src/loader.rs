//! Opening a library, checking it, and registering its operators.

use crate::graph_ext::{GraphPass, PartitionStrategy};
use crate::host::{c_str, checked, host_table, host_version};
use crate::mxnet;
use crate::opdef::{op_def, LoadedOp};
use oxnet_abi as abi;
use oxnet_core::{registry, Error, Result};
use std::collections::{HashMap, HashSet};
use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// How to load a library.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Print nothing (by default the operators found are printed).
    pub quiet: bool,
}

/// A partitioner or graph pass a library declared (its name and strategies;
/// [`Library::strategy`] and [`Library::pass`] give the callable handles).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphExtension {
    /// Its name.
    pub name: String,
    /// For partitioners: the strategies, with their subgraph operator names.
    pub strategies: Vec<(String, String)>,
}

struct Loaded {
    path: PathBuf,
    op_names: Vec<String>,
    partitioners: Vec<GraphExtension>,
    passes: Vec<String>,
    subgraph_ops: Vec<String>,
    strategies: Vec<PartitionStrategy>,
    pass_handles: Vec<GraphPass>,
    _code: Arc<LibraryCode>,
}

/// A loaded extension library. Libraries stay loaded for the process.
#[derive(Clone)]
pub struct Library {
    inner: Arc<Loaded>,
}

impl std::fmt::Debug for Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Library").field("path", &self.inner.path).field("ops", &self.inner.op_names).finish()
    }
}

impl Library {
    /// The path it was loaded from (as given).
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Names of the operators it registered, in the library's order.
    pub fn op_names(&self) -> &[String] {
        &self.inner.op_names
    }

    /// The partitioners it declared, with their strategies.
    pub fn partitioners(&self) -> &[GraphExtension] {
        &self.inner.partitioners
    }

    /// Names of the graph passes it declared.
    pub fn passes(&self) -> &[String] {
        &self.inner.passes
    }

    /// Names of its operators marked as subgraph operators (`is_subgraph_op`).
    pub fn subgraph_op_names(&self) -> &[String] {
        &self.inner.subgraph_ops
    }

    /// Every strategy of every partitioner it declared, callable.
    pub fn strategies(&self) -> &[PartitionStrategy] {
        &self.inner.strategies
    }

    /// The strategy `strategy` of its partitioner `partitioner`.
    pub fn strategy(&self, partitioner: &str, strategy: &str) -> Result<PartitionStrategy> {
        self.inner
            .strategies
            .iter()
            .find(|s| s.partitioner() == partitioner && s.name() == strategy)
            .cloned()
            .ok_or_else(|| {
                fail_named(
                    &self.inner.path,
                    format!("it declares no partitioner `{partitioner}` with a strategy `{strategy}`"),
                )
            })
    }

    /// Its graph pass `name`, callable.
    pub fn pass(&self, name: &str) -> Result<GraphPass> {
        self.inner
            .pass_handles
            .iter()
            .find(|p| p.name() == name)
            .cloned()
            .ok_or_else(|| fail_named(&self.inner.path, format!("it declares no graph pass `{name}`")))
    }
}

fn fail_named(path: &Path, msg: impl std::fmt::Display) -> Error {
    Error::Custom { msg: format!("library `{}`: {msg}", path.display()), source: None }
}

/// The strategy `strategy` of partitioner `partitioner`, searched in every
/// loaded library (MXNet looks backends up by name the same way).
pub fn find_strategy(partitioner: &str, strategy: &str) -> Result<PartitionStrategy> {
    loaded()
        .iter()
        .flat_map(|l| l.strategies().iter())
        .find(|s| s.partitioner() == partitioner && s.name() == strategy)
        .cloned()
        .ok_or_else(|| Error::Custom {
            msg: format!(
                "no loaded library declares a partitioner `{partitioner}` with a strategy `{strategy}`"
            ),
            source: None,
        })
}

/// The graph pass `name`, searched in every loaded library.
pub fn find_pass(name: &str) -> Result<GraphPass> {
    loaded().iter().find_map(|l| l.pass(name).ok()).ok_or_else(|| Error::Custom {
        msg: format!("no loaded library declares a graph pass `{name}`"),
        source: None,
    })
}

static LOADED: Mutex<Option<HashMap<PathBuf, Library>>> = Mutex::new(None);

/// Every library loaded so far.
pub fn loaded() -> Vec<Library> {
    LOADED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .map(|m| m.values().cloned().collect())
        .unwrap_or_default()
}

/// Loads the library at `path` (absolute, with the platform's shared-library
/// suffix) and registers its operators; prints "Found N operators in
/// library" and their names when `verbose`. Loading a path again returns the
/// library loaded before.
pub fn load(path: impl AsRef<Path>, verbose: bool) -> Result<Library> {
    load_with(path, &LoadOptions { quiet: !verbose })
}

fn fail(path: &Path, msg: impl std::fmt::Display) -> Error {
    Error::Custom { msg: format!("cannot load library `{}`: {msg}", path.display()), source: None }
}

/// [`load`] with options.
pub fn load_with(path: impl AsRef<Path>, options: &LoadOptions) -> Result<Library> {
    let path = path.as_ref();
    if !path.is_absolute() {
        return Err(fail(path, "the path must be absolute"));
    }
    let suffix = std::env::consts::DLL_SUFFIX;
    if !path.to_string_lossy().ends_with(suffix) {
        return Err(fail(path, format!("the file name must end with `{suffix}`")));
    }
    if !path.is_file() {
        return Err(fail(path, "no such file"));
    }
    let key = path.canonicalize().map_err(|e| fail(path, e))?;
    // One load at a time: the registry checks and registration below are atomic.
    let mut guard = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(lib) = guard.as_ref().and_then(|m| m.get(&key)) {
        if !options.quiet {
            println!(
                "Library {} was loaded before; its {} operators are registered",
                path.display(),
                lib.op_names().len()
            );
        }
        return Ok(lib.clone());
    }
    let lib = open(path)?;
    if !options.quiet {
        println!("Found {} operators in library", lib.op_names().len());
        for (i, name) in lib.op_names().iter().enumerate() {
            println!("\tOp[{i}] {name}");
        }
        if !lib.partitioners().is_empty() || !lib.passes().is_empty() {
            println!(
                "Found {} partitioners and {} graph passes",
                lib.partitioners().len(),
                lib.passes().len()
            );
        }
    }
    crate::backends::register(&lib);
    guard.get_or_insert_with(HashMap::new).insert(key, lib.clone());
    Ok(lib)
}

/// The code of a loaded library and what the host built to call into it,
/// kept alive by every operator, strategy and pass that calls it.
pub(crate) struct LibraryCode {
    /// For MXNet-style libraries: the objects their ABI descriptors point to
    /// (declared first: dropped before the code they call).
    _adapter: Option<Box<dyn std::any::Any + Send + Sync>>,
    _lib: libloading::Library,
}

/// A library's registrations in ABI form, whichever kind of library it is.
struct Tables<'a> {
    ops: &'a [abi::Op],
    partitioners: &'a [abi::Partitioner],
    /// The user data of each strategy's callbacks, per partitioner (`None`:
    /// the partitioner's own `user_data`).
    strategy_data: Option<&'a [Vec<*mut c_void>]>,
    passes: &'a [abi::Pass],
}

fn open(path: &Path) -> Result<Library> {
    // SAFETY: loading a library runs its initialisers; loading arbitrary code
    // is what the caller asked for.
    let lib = unsafe { libloading::Library::new(path) }
        .map_err(|e| fail(path, format!("not a loadable shared library ({e})")))?;
    // SAFETY: the entry point is declared with this signature by the ABI.
    let entry = unsafe { lib.get::<abi::EntryFn>(abi::ENTRY_NAME.as_bytes()).ok().map(|e| *e) };
    match entry {
        Some(entry) => open_oxnet(path, lib, entry),
        None if mxnet::is_mxnet_library(&lib) => open_mxnet(path, lib),
        None => Err(fail(
            path,
            format!(
                "it exports neither `{}` nor MXNet's `_opVersion`: it is not an extension library (build \
                 it against oxnet_ext.h, lib_api.h or the oxnet-sdk crate, or against MXNet's lib_api.h)",
                abi::ENTRY_NAME
            ),
        )),
    }
}

/// A library built for MXNet (1.7 to 1.9): adapted to oxnet's ABI.
fn open_mxnet(path: &Path, lib: libloading::Library) -> Result<Library> {
    let adapted = mxnet::adapt(&lib).map_err(|e| fail(path, e))?;
    let tables = Tables {
        ops: &adapted.ops,
        partitioners: &adapted.partitioners,
        strategy_data: Some(&adapted.strategy_data),
        passes: &adapted.passes,
    };
    // The descriptors point into `owned`, which moves into the code handle
    // as a box: the addresses stay.
    let code = Arc::new(LibraryCode { _adapter: Some(adapted.owned), _lib: lib });
    register(path, &tables, &code)
}

/// A library built against oxnet's ABI.
fn open_oxnet(path: &Path, lib: libloading::Library, entry: abi::EntryFn) -> Result<Library> {
    // SAFETY: the entry point is declared with this signature by the ABI.
    let table = unsafe { entry(host_table()) };
    if table.is_null() {
        return Err(fail(path, "its entry point refused this oxnet (returned no table)"));
    }
    // The first two fields are the same in every ABI version.
    let (version, size) = unsafe {
        let head = table as *const u32;
        (*head, *head.add(1))
    };
    if version != abi::ABI_VERSION {
        return Err(fail(
            path,
            format!(
                "it was built for oxnet extension ABI version {version}; this oxnet ({}) speaks version {}",
                env!("CARGO_PKG_VERSION"),
                abi::ABI_VERSION
            ),
        ));
    }
    let table: abi::Library = unsafe { *table };
    let ours = abi::Library::empty();
    let sizes = [
        ("oxnet_ext_library", size, ours.struct_size),
        ("oxnet_ext_op", table.op_size, ours.op_size),
        ("oxnet_ext_partitioner", table.partitioner_size, ours.partitioner_size),
        ("oxnet_ext_pass", table.pass_size, ours.pass_size),
        ("DLTensor", table.tensor_size, ours.tensor_size),
        ("oxnet_ext_shape", table.shape_size, ours.shape_size),
        ("oxnet_ext_resource", table.resource_size, ours.resource_size),
    ];
    for (name, theirs, ours) in sizes {
        if theirs != ours {
            return Err(fail(
                path,
                format!("its {name} is {theirs} bytes, this oxnet's is {ours} (ABI version {version} on both sides: a mismatched header?)"),
            ));
        }
    }
    if let Some(init) = table.initialize {
        checked("initialize", |err| unsafe { init(host_version(), err) }).map_err(|e| {
            fail(
                path,
                format!(
                    "the library refused oxnet {} (host version {}): {e}",
                    env!("CARGO_PKG_VERSION"),
                    host_version()
                ),
            )
        })?;
    }
    let tables = Tables {
        ops: slice(table.ops, table.num_ops, "operators", path)?,
        partitioners: slice(table.partitioners, table.num_partitioners, "partitioners", path)?,
        strategy_data: None,
        passes: slice(table.passes, table.num_passes, "graph passes", path)?,
    };
    let code = Arc::new(LibraryCode { _adapter: None, _lib: lib });
    register(path, &tables, &code)
}

/// Checks every registration, then registers the operators; nothing is
/// registered if one is bad.
fn register(path: &Path, tables: &Tables, code: &Arc<LibraryCode>) -> Result<Library> {
    let ops = read_ops(path, tables.ops, code)?;
    let (partitioners, strategies) = read_partitioners(path, tables, code)?;
    let pass_handles = read_passes(path, tables.passes, code)?;
    let passes = pass_handles.iter().map(|p| p.name().to_string()).collect();
    let op_names: Vec<String> = ops.iter().map(|o| o.name.clone()).collect();
    let subgraph_ops = ops.iter().filter(|o| o.desc.is_subgraph_op != 0).map(|o| o.name.clone()).collect();
    for op in ops {
        registry::register(op_def(op));
    }
    Ok(Library {
        inner: Arc::new(Loaded {
            path: path.to_path_buf(),
            op_names,
            partitioners,
            passes,
            subgraph_ops,
            strategies,
            pass_handles,
            _code: code.clone(),
        }),
    })
}

fn slice<'a, T>(ptr: *const T, n: i32, what: &str, path: &Path) -> Result<&'a [T]> {
    if n < 0 || (n > 0 && ptr.is_null()) {
        return Err(fail(path, format!("its table declares {n} {what} at {ptr:?}")));
    }
    // SAFETY: the library declares `n` entries at `ptr`, living as long as it.
    Ok(if n == 0 { &[] } else { unsafe { std::slice::from_raw_parts(ptr, n as usize) } })
}

/// Checks every operator descriptor; nothing is registered if one is bad.
fn read_ops(path: &Path, descs: &[abi::Op], code: &Arc<LibraryCode>) -> Result<Vec<Arc<LoadedOp>>> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (i, d) in descs.iter().enumerate() {
        if d.struct_size != std::mem::size_of::<abi::Op>() as u32 {
            return Err(fail(path, format!("operator {i} has struct_size {}", d.struct_size)));
        }
        if d.name.is_null() {
            return Err(fail(path, format!("operator {i} has no name")));
        }
        // SAFETY: non-null NUL-terminated string in the library's table.
        let name = unsafe { std::ffi::CStr::from_ptr(d.name) }
            .to_str()
            .map_err(|_| fail(path, format!("operator {i}'s name is not UTF-8")))?
            .to_string();
        let bad = |what: &str| fail(path, format!("operator `{name}` {what}"));
        if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(bad("has an empty name or one with spaces"));
        }
        if !seen.insert(name.clone()) {
            return Err(bad("is declared twice"));
        }
        if registry::contains(&name) {
            return Err(bad(
                "is already registered (a built-in or another library's operator has this name)",
            ));
        }
        if d.parse_attrs.is_none() || d.infer_type.is_none() || d.infer_shape.is_none() {
            return Err(bad("lacks parse_attrs, infer_type or infer_shape"));
        }
        let has_kernel = d.forward.iter().any(|f| f.is_some()) || d.create_state.iter().any(|f| f.is_some());
        if !has_kernel {
            return Err(bad("has neither a forward function nor create_state"));
        }
        out.push(Arc::new(LoadedOp {
            name,
            library: path.display().to_string(),
            desc: *d,
            _code: code.clone(),
        }));
    }
    Ok(out)
}

/// Checks every partitioner and its strategies and makes their handles.
fn read_partitioners(
    path: &Path,
    tables: &Tables,
    code: &Arc<LibraryCode>,
) -> Result<(Vec<GraphExtension>, Vec<PartitionStrategy>)> {
    let library = path.display().to_string();
    let mut out = Vec::new();
    let mut handles = Vec::new();
    for (i, p) in tables.partitioners.iter().enumerate() {
        if p.struct_size != std::mem::size_of::<abi::Partitioner>() as u32 {
            return Err(fail(path, format!("partitioner {i} has struct_size {}", p.struct_size)));
        }
        let name = unsafe { c_str(p.name) };
        if name.is_empty() || out.iter().any(|g: &GraphExtension| g.name == name) {
            return Err(fail(path, format!("partitioner {i} has no name or the name `{name}` twice")));
        }
        let mut strategies = Vec::new();
        for (j, s) in slice(p.strategies, p.num_strategies, "strategies", path)?.iter().enumerate() {
            let (sname, op) = unsafe { (c_str(s.name), c_str(s.subgraph_op_name)) };
            if s.supported_ops.is_none() && s.create_selector.is_none() {
                return Err(fail(path, format!("partitioner `{name}` strategy `{sname}` selects no nodes")));
            }
            if sname.is_empty() || strategies.iter().any(|(n, _)| *n == sname) {
                return Err(fail(
                    path,
                    format!("partitioner `{name}` has a strategy without a name or two named `{sname}`"),
                ));
            }
            let user_data = match tables.strategy_data {
                Some(data) => data[i][j],
                None => p.user_data,
            };
            handles.push(PartitionStrategy::new(&library, &name, user_data, *s, code.clone()));
            strategies.push((sname, op));
        }
        out.push(GraphExtension { name, strategies });
    }
    Ok((out, handles))
}

/// Checks every graph pass and makes their handles.
fn read_passes(path: &Path, descs: &[abi::Pass], code: &Arc<LibraryCode>) -> Result<Vec<GraphPass>> {
    let library = path.display().to_string();
    let mut out: Vec<GraphPass> = Vec::new();
    for (i, p) in descs.iter().enumerate() {
        if p.struct_size != std::mem::size_of::<abi::Pass>() as u32 {
            return Err(fail(path, format!("graph pass {i} has struct_size {}", p.struct_size)));
        }
        let name = unsafe { c_str(p.name) };
        let pass = GraphPass::new(&library, p, code.clone())
            .ok_or_else(|| fail(path, format!("graph pass `{name}` has no function")))?;
        if name.is_empty() || out.iter().any(|q| q.name() == name) {
            return Err(fail(path, format!("graph pass {i} has no name or the name `{name}` twice")));
        }
        out.push(pass);
    }
    Ok(out)
}
