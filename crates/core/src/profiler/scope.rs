//! Guards that time a piece of the engine's work and record it when
//! dropped: an operator call, a backward kernel, a custom operator's own
//! code, an API call; and the markers that say where a call comes from (a
//! graph's node, a custom operator's body).

use super::record::{now_ns, push, Record};
use super::{IMPERATIVE, MODE, SYMBOLIC};
use std::cell::{Cell, RefCell};
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

/// The domain of operator calls (MXNet's name).
pub(crate) const OPERATOR_DOMAIN: &str = "operator";
/// The domain of custom operators and the calls they make (MXNet's name).
pub(crate) const CUSTOM_DOMAIN: &str = "Custom Operator";

thread_local! {
    /// How many graph runs enclose this thread's current call.
    static GRAPH_DEPTH: Cell<u32> = const { Cell::new(0) };
    /// The custom operators (their `op_type`) whose code is running on this thread, innermost last.
    static CUSTOM: RefCell<Vec<Arc<str>>> = const { RefCell::new(Vec::new()) };
}

fn shared(domain: &'static str, cell: &'static OnceLock<Arc<str>>) -> Arc<str> {
    cell.get_or_init(|| Arc::from(domain)).clone()
}

fn operator_domain() -> Arc<str> {
    static D: OnceLock<Arc<str>> = OnceLock::new();
    shared(OPERATOR_DOMAIN, &D)
}

fn custom_domain() -> Arc<str> {
    static D: OnceLock<Arc<str>> = OnceLock::new();
    shared(CUSTOM_DOMAIN, &D)
}

/// Times one call; records it when dropped.
#[must_use = "the call is timed until the guard is dropped"]
pub struct OpScope {
    name: String,
    domain: Arc<str>,
    start_ns: u64,
    detail: Option<String>,
}

impl OpScope {
    /// Names the graph node the call runs for (shown in the trace).
    pub fn set_node(&mut self, node: &str) {
        self.detail = Some(node.to_string());
    }
}

impl Drop for OpScope {
    fn drop(&mut self) {
        let end = now_ns();
        let mut r = Record::span(
            std::mem::take(&mut self.name),
            self.domain.clone(),
            self.start_ns,
            end.saturating_sub(self.start_ns),
        );
        r.detail = self.detail.take();
        push(r);
    }
}

/// Times a call of operator `op`, when operator calls of its kind
/// (imperative, or a graph's node inside [`graph_scope`]) are recorded.
/// Inside a custom operator's code the event is named
/// `<op_type>::<op>` in the `Custom Operator` domain, as in MXNet.
#[inline]
pub fn op_scope(op: &str) -> Option<OpScope> {
    if MODE.load(Ordering::Relaxed) & (IMPERATIVE | SYMBOLIC) == 0 {
        return None;
    }
    start_op(op, "")
}

/// Times a backward kernel of operator `op` (named `_backward_<op>`).
#[inline]
pub fn backward_scope(op: &str) -> Option<OpScope> {
    if MODE.load(Ordering::Relaxed) & (IMPERATIVE | SYMBOLIC) == 0 {
        return None;
    }
    start_op(op, "_backward_")
}

#[cold]
fn start_op(op: &str, prefix: &str) -> Option<OpScope> {
    let bit = if GRAPH_DEPTH.with(Cell::get) > 0 { SYMBOLIC } else { IMPERATIVE };
    if MODE.load(Ordering::Relaxed) & bit == 0 {
        return None;
    }
    let custom = CUSTOM.with(|c| c.borrow().last().cloned());
    let (name, domain) = match custom {
        Some(outer) => (format!("{outer}::{prefix}{op}"), custom_domain()),
        None => (format!("{prefix}{op}"), operator_domain()),
    };
    Some(OpScope { name, domain, start_ns: now_ns(), detail: None })
}

/// Marks the calls made while it lives as a graph's nodes (profiled under
/// `profile_symbolic`).
#[must_use = "calls count as a graph's while the guard lives"]
pub struct GraphScope(());

impl Drop for GraphScope {
    fn drop(&mut self) {
        GRAPH_DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// Starts a graph run (see [`GraphScope`]).
pub fn graph_scope() -> GraphScope {
    GRAPH_DEPTH.with(|d| d.set(d.get() + 1));
    GraphScope(())
}

/// Times a custom operator's own code and names the calls it makes after it.
#[must_use = "the custom operator's code is timed until the guard is dropped"]
pub struct CustomScope {
    timed: Option<OpScope>,
}

impl Drop for CustomScope {
    fn drop(&mut self) {
        if self.timed.is_some() {
            CUSTOM.with(|c| c.borrow_mut().pop());
        }
        self.timed = None; // records the span
    }
}

/// Starts custom operator `op_type`'s forward (or `backward`) code, of the
/// kind `label` (`pure_python` for Python operators): recorded as
/// `<op_type>::<label>` (`_backward_<op_type>::<label>`) in the `Custom
/// Operator` domain; the operator calls it makes are named
/// `<op_type>::<operator>`.
pub fn custom_scope(op_type: &str, label: &str, backward: bool) -> CustomScope {
    if MODE.load(Ordering::Relaxed) & (IMPERATIVE | SYMBOLIC) == 0 {
        return CustomScope { timed: None };
    }
    let prefix = if backward { "_backward_" } else { "" };
    let timed = OpScope {
        name: format!("{prefix}{op_type}::{label}"),
        domain: custom_domain(),
        start_ns: now_ns(),
        detail: None,
    };
    CUSTOM.with(|c| c.borrow_mut().push(Arc::from(op_type)));
    CustomScope { timed: Some(timed) }
}

/// Times any span of the engine's work of kind `bit` (e.g. [`super::API`])
/// in `domain`; `None` when that kind is not recorded.
#[must_use = "the span is timed until the guard is dropped"]
pub struct Span {
    _timed: OpScope,
}

/// Starts a [`Span`].
#[inline]
pub fn span(bit: u8, domain: &str, name: &str) -> Option<Span> {
    if MODE.load(Ordering::Relaxed) & bit == 0 {
        return None;
    }
    Some(Span {
        _timed: OpScope {
            name: name.to_string(),
            domain: Arc::from(domain),
            start_ns: now_ns(),
            detail: None,
        },
    })
}
