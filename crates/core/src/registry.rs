//! The one operator registry: every operator, built in or not, is found here
//! by name.
//!
//! Operators reach it in two ways, open to every crate alike:
//!
//! - at run time, by calling [`register`] (a custom operator made on the
//!   fly, an extension library being loaded);
//! - at link time, by naming a registrar function with
//!   [`register_operators!`](crate::register_operators): the registry runs
//!   every linked registrar once, on its first use. This is how the
//!   built-in operators of the `oxnet-ops` crate arrive, and how a user's
//!   operator crate can ship operators that exist as soon as it is linked.
//!
//! Core itself names no operator crate. Used without one (no registrar
//! linked), only the `Custom` operator exists, and calling any other name
//! is an [`Error::UnknownOp`] that says how to link the built-ins.

use crate::attrs::AttrSpec;
use crate::fork::ForkRwLock;
use crate::op::OpDef;
use crate::{Error, Result};
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Once};

/// A registered operator.
pub type Op = Arc<OpDef>;

/// Every registered operator by name and alias. A [`ForkRwLock`]: operators
/// are looked up on other threads while a `DataLoader` forks its workers.
/// Operators it drops are dropped after the lock is released (a Python
/// operator's drop may run Python code, which must not happen while a
/// fork's prepare handler may be waiting for this lock).
static REGISTRY: ForkRwLock<Option<HashMap<String, Op>>> = ForkRwLock::new(None);
crate::fork_safe!(REGISTRY);
static LINKED: Once = Once::new();

/// The registrars of every linked operator crate, collected at link time
/// (fill it with [`register_operators!`](crate::register_operators)).
#[linkme::distributed_slice]
pub static REGISTRARS: [fn()];

thread_local! {
    /// Set while this thread runs the linked registrars.
    static RUNNING_REGISTRARS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs the linked registrars once: the `Custom` operator first (core's
/// own), then every registrar in [`REGISTRARS`]. A registrar that panics
/// is reported and skipped; the operators it registered before stay.
fn ensure_linked() {
    if RUNNING_REGISTRARS.with(|f| f.get()) {
        return;
    }
    LINKED.call_once(|| {
        RUNNING_REGISTRARS.with(|f| f.set(true));
        register(crate::custom::custom_op_def());
        for registrar in REGISTRARS.iter() {
            if let Err(payload) = catch_unwind(AssertUnwindSafe(registrar)) {
                eprintln!(
                    "oxnet warning: an operator registrar panicked and was skipped: {}",
                    crate::dispatch::panic_message(payload.as_ref())
                );
            }
        }
        RUNNING_REGISTRARS.with(|f| f.set(false));
    });
}

/// Whether any operator crate is linked (its registrar is in
/// [`REGISTRARS`]): without one, only the `Custom` operator exists.
pub fn operator_crates_linked() -> bool {
    !REGISTRARS.is_empty()
}

/// What an [`Error::UnknownOp`] adds to the name: where the registered
/// operators are listed, or, when no operator crate is linked, how to link
/// the built-ins.
pub(crate) fn unknown_op_hint() -> &'static str {
    if operator_crates_linked() {
        "see oxnet_core::registry::list_ops for the registered ones"
    } else {
        "no operator crate is linked, so only `Custom` exists: the built-in operators come with the \
         oxnet-ops crate; depend on it and write `use oxnet_ops as _;` once"
    }
}

/// Registers `def` under its name and aliases. Registering a name again
/// replaces the old operator and prints a warning (except among the
/// linked registrars, whose order is unspecified).
///
/// Built-in operators are registered through this same function.
pub fn register(def: OpDef) -> Op {
    ensure_linked();
    let warn = !RUNNING_REGISTRARS.with(|f| f.get());
    let op = Arc::new(def);
    let mut replaced = Vec::new();
    {
        let mut guard = REGISTRY.write();
        let map = guard.get_or_insert_with(HashMap::new);
        for name in std::iter::once(&op.name).chain(op.aliases.iter()) {
            if let Some(old) = map.insert(name.clone(), op.clone()) {
                if warn {
                    eprintln!(
                        "oxnet warning: operator `{name}` was registered again; the new definition replaces the old one"
                    );
                }
                replaced.push(old);
            }
        }
    }
    // The replaced operators are dropped here, the lock released.
    drop(replaced);
    op
}

/// Removes the operator registered under `name` (with all its names and
/// aliases). Returns whether there was one. Built-ins can be removed too;
/// calls already holding the operator finish normally.
pub fn unregister(name: &str) -> bool {
    ensure_linked();
    let op = {
        let mut guard = REGISTRY.write();
        let Some(map) = guard.as_mut() else { return false };
        let Some(op) = map.get(name).cloned() else { return false };
        map.retain(|_, v| !Arc::ptr_eq(v, &op));
        op
    };
    // The operator is dropped here, the lock released.
    drop(op);
    true
}

/// Looks an operator up by name or alias.
pub fn get(name: &str) -> Result<Op> {
    ensure_linked();
    let guard = REGISTRY.read();
    guard.as_ref().and_then(|m| m.get(name).cloned()).ok_or_else(|| Error::UnknownOp(name.to_string()))
}

/// True if an operator is registered under `name`.
pub fn contains(name: &str) -> bool {
    get(name).is_ok()
}

/// What a listing says about one operator.
#[derive(Debug, Clone)]
pub struct OpInfo {
    /// The operator's name.
    pub name: String,
    /// Its aliases.
    pub aliases: Vec<String>,
    /// Its documentation.
    pub doc: String,
    /// Argument names with default attributes (may depend on attributes).
    pub arguments: Vec<String>,
    /// Output names with default attributes.
    pub outputs: Vec<String>,
    /// Declared attributes.
    pub attrs: Vec<AttrSpec>,
    /// Whether undeclared keywords are accepted.
    pub allow_extra_attrs: bool,
}

/// Every registered operator (one entry per operator, aliases folded in),
/// sorted by name.
pub fn list_ops() -> Vec<OpInfo> {
    ensure_linked();
    // The operators are gathered under the lock and described after it
    // (their name functions are operator code, which may be slow or call
    // into Python).
    let ops: Vec<Op> = REGISTRY.read().as_ref().map(|m| m.values().cloned().collect()).unwrap_or_default();
    let mut seen = std::collections::HashSet::new();
    let mut out: Vec<OpInfo> = Vec::new();
    for op in &ops {
        if !seen.insert(Arc::as_ptr(op) as usize) {
            continue;
        }
        // names with default attributes, where they can be computed
        let defaults = crate::Attrs::defaults(&op.attrs);
        let names = |f: &crate::op::NamesFn| f(&defaults).unwrap_or_default();
        out.push(OpInfo {
            name: op.name.clone(),
            aliases: op.aliases.clone(),
            doc: op.doc.clone(),
            arguments: names(&op.arguments),
            outputs: names(&op.outputs),
            attrs: op.attrs.clone(),
            allow_extra_attrs: op.allow_extra_attrs,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Names a function that registers a crate's operators, collected at link
/// time: the registry runs it once, before its first look-up, so the
/// operators exist as soon as the crate is linked. `oxnet-ops` registers
/// every built-in this way; a user's operator crate can too.
///
/// A crate is linked when something uses it: a dependency that the code
/// never names is left out by the linker, registrar and all. A binary
/// that needs a crate only for its operators writes `use that_crate as _;`.
///
/// ```
/// use oxnet_core::{invoke1, registry, NDArray, OpDef};
///
/// fn register_mine() {
///     registry::register(
///         OpDef::new("times_three")
///             .forward(|_ctx, ins, outs| {
///                 let x = ins[0].as_slice::<f32>()?;
///                 let y = outs[0].as_mut_slice::<f32>()?;
///                 y.iter_mut().zip(x).for_each(|(y, x)| *y = 3.0 * x);
///                 Ok(())
///             }),
///     );
/// }
/// oxnet_core::register_operators!(register_mine);
///
/// let x = NDArray::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
/// assert_eq!(invoke1("times_three", &[&x], &[]).unwrap().to_vec::<f32>().unwrap(), vec![3.0, 6.0]);
/// ```
#[macro_export]
macro_rules! register_operators {
    ($registrar:path) => {
        const _: () = {
            #[$crate::linkme::distributed_slice($crate::registry::REGISTRARS)]
            #[linkme(crate = $crate::linkme)]
            static REGISTRAR: fn() = $registrar;
        };
    };
}
