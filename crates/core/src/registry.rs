//! The one operator registry: every operator, built in or not, is found here
//! by name.

use crate::attrs::AttrSpec;
use crate::op::OpDef;
use crate::{Error, Result};
use std::collections::HashMap;
use std::sync::{Arc, Once, RwLock};

/// A registered operator.
pub type Op = Arc<OpDef>;

static REGISTRY: RwLock<Option<HashMap<String, Op>>> = RwLock::new(None);
static BUILTINS: Once = Once::new();

thread_local! {
    /// Set while this thread registers the built-in operators.
    static LOADING_BUILTINS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn ensure_builtins() {
    if LOADING_BUILTINS.with(|f| f.get()) {
        return;
    }
    BUILTINS.call_once(|| {
        LOADING_BUILTINS.with(|f| f.set(true));
        crate::ops::register_builtins();
        LOADING_BUILTINS.with(|f| f.set(false));
    });
}

/// Registers `def` under its name and aliases. Registering a name again
/// replaces the old operator and prints a warning.
///
/// Built-in operators are registered through this same function.
pub fn register(def: OpDef) -> Op {
    ensure_builtins();
    let warn = !LOADING_BUILTINS.with(|f| f.get());
    let op = Arc::new(def);
    let mut guard = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    let map = guard.get_or_insert_with(HashMap::new);
    for name in std::iter::once(&op.name).chain(op.aliases.iter()) {
        if map.insert(name.clone(), op.clone()).is_some() && warn {
            eprintln!("oxnet warning: operator `{name}` was registered again; the new definition replaces the old one");
        }
    }
    op
}

/// Removes the operator registered under `name` (with all its names and
/// aliases). Returns whether there was one. Built-ins can be removed too;
/// calls already holding the operator finish normally.
pub fn unregister(name: &str) -> bool {
    ensure_builtins();
    let mut guard = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    let Some(map) = guard.as_mut() else { return false };
    let Some(op) = map.get(name).cloned() else { return false };
    map.retain(|_, v| !Arc::ptr_eq(v, &op));
    true
}

/// Looks an operator up by name or alias.
pub fn get(name: &str) -> Result<Op> {
    ensure_builtins();
    let guard = REGISTRY.read().unwrap_or_else(|e| e.into_inner());
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
    ensure_builtins();
    let guard = REGISTRY.read().unwrap_or_else(|e| e.into_inner());
    let mut seen = std::collections::HashSet::new();
    let mut out: Vec<OpInfo> = Vec::new();
    if let Some(map) = guard.as_ref() {
        for op in map.values() {
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
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}
