//! Block names as MXNet 1.x gives them: a class hint and a counter
//! (`dense0_`, `dense1_`), and inside a parent's name scope the parent's
//! prefix before that (`sequential0_dense0_`).
//!
//! Counters are kept per thread and per scope: the top level counts across
//! the whole thread (MXNet's `NameManager`), each [`with_name_scope`] call
//! counts anew, as a parent block's `name_scope()` does in MXNet.
//!
//! ```
//! use oxnet_nn::naming::{unique_prefix, with_name_scope};
//! std::thread::spawn(|| {
//!     assert_eq!(unique_prefix("dense"), "dense0_");
//!     assert_eq!(unique_prefix("dense"), "dense1_");
//!     let inner = with_name_scope("sequential0_", || unique_prefix("dense"));
//!     assert_eq!(inner, "sequential0_dense0_");
//! })
//! .join()
//! .unwrap();
//! ```

use std::cell::RefCell;
use std::collections::HashMap;

struct Scope {
    prefix: String,
    counters: HashMap<String, usize>,
}

thread_local! {
    static SCOPES: RefCell<Vec<Scope>> = RefCell::new(vec![Scope { prefix: String::new(), counters: HashMap::new() }]);
}

/// A new prefix for a block of kind `hint` (lower-cased): the current
/// scope's prefix, the hint and the scope's counter for it, then `_`.
pub fn unique_prefix(hint: &str) -> String {
    let hint = hint.to_lowercase();
    SCOPES.with(|s| {
        let mut scopes = s.borrow_mut();
        let scope = scopes.last_mut().expect("the top-level scope is never removed");
        let n = scope.counters.entry(hint.clone()).or_insert(0);
        let prefix = format!("{}{hint}{n}_", scope.prefix);
        *n += 1;
        prefix
    })
}

/// Runs `f` with blocks created inside it named under `prefix` (a parent
/// block's prefix, such as `sequential0_`), counting from 0 again.
pub fn with_name_scope<R>(prefix: &str, f: impl FnOnce() -> R) -> R {
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            SCOPES.with(|s| {
                let mut scopes = s.borrow_mut();
                if scopes.len() > 1 {
                    scopes.pop();
                }
            });
        }
    }
    SCOPES.with(|s| s.borrow_mut().push(Scope { prefix: prefix.to_string(), counters: HashMap::new() }));
    let _pop = Pop;
    f()
}
