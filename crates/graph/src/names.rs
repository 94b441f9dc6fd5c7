//! Automatic node names for the Rust API: the operator's name in lower case
//! followed by a per-thread counter (`fullyconnected0`), as MXNet's
//! `NameManager` makes them. The Python face keeps its own `mx.name`
//! managers and always passes names explicitly.

use std::cell::RefCell;
use std::collections::HashMap;

thread_local! {
    static COUNTERS: RefCell<HashMap<String, usize>> = RefCell::new(HashMap::new());
}

/// The next automatic name for a node of operator `op_name`.
pub fn auto_name(op_name: &str) -> String {
    let hint = op_name.to_lowercase();
    COUNTERS.with(|c| {
        let mut c = c.borrow_mut();
        let n = c.entry(hint.clone()).or_insert(0);
        let name = format!("{hint}{n}");
        *n += 1;
        name
    })
}

/// Restarts this thread's counters (names start again at 0).
pub fn reset() {
    COUNTERS.with(|c| c.borrow_mut().clear());
}
