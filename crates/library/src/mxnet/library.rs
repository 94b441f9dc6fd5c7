//! One loaded MXNet-style library: its functions, and the calls into it that
//! turn its failures into messages.

use super::guard::guarded;
use super::symbols::Symbols;
use crate::host::c_str;
use std::ffi::{c_int, c_void};

/// `MX_FAIL`: what a library function returns when it failed.
const MX_FAIL: c_int = 0;

/// A loaded MXNet-style library.
pub(crate) struct MxLibrary {
    /// Its functions.
    pub syms: Symbols,
}

impl MxLibrary {
    /// How many messages the library has logged so far (`MX_ERROR_MSG`).
    fn message_count(&self) -> c_int {
        guarded(|| unsafe { (self.syms.ops.msg_size)() }).unwrap_or(0)
    }

    /// The messages logged since `start`, joined. MXNet's list only grows,
    /// so a call's own messages are those past the count before it.
    fn messages_since(&self, start: c_int) -> String {
        let end = self.message_count();
        let mut parts = Vec::new();
        for idx in start.max(0)..end {
            let mut text = std::ptr::null();
            // SAFETY: `idx` is below the library's count; it writes a C string.
            if guarded(|| unsafe { (self.syms.ops.msg_get)(idx, &mut text) }).is_ok() {
                // SAFETY: NULL or the library's NUL-terminated message.
                let t = unsafe { c_str(text) };
                let t = t.trim();
                if !t.is_empty() {
                    parts.push(t.to_string());
                }
            }
        }
        parts.join("; ")
    }

    /// Calls a library function that returns `MX_SUCCESS`/`MX_FAIL`. A
    /// failure gives the messages the library logged during the call; an
    /// exception gives its message (and those logged before it).
    ///
    /// `f` must be the foreign call alone (see `guarded`).
    pub(crate) fn call(&self, f: impl FnOnce() -> c_int) -> Result<(), String> {
        let start = self.message_count();
        match guarded(f) {
            Ok(status) if status != MX_FAIL => Ok(()),
            Ok(_) => {
                let logged = self.messages_since(start);
                Err(if logged.is_empty() { "returned MX_FAIL without a message".to_string() } else { logged })
            }
            Err(exception) => {
                let logged = self.messages_since(start);
                Err(if logged.is_empty() { exception } else { format!("{exception}; {logged}") })
            }
        }
    }

    /// Calls a library function that returns nothing (the selector's).
    pub(crate) fn call_void(&self, f: impl FnOnce()) -> Result<(), String> {
        guarded(f)
    }

    /// Frees memory the library allocated for the host (`_opCallFree`).
    pub(crate) fn free<T>(&self, p: *mut T) {
        if !p.is_null() {
            // A failing free is ignored: the memory is the library's.
            let _ = guarded(|| unsafe { (self.syms.ops.free)(p as *mut c_void) });
        }
    }
}
