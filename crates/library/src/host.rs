//! The host's side of the ABI: its table, the per-call error sink and the
//! message callbacks a library may call.

use oxnet_abi as abi;
use std::ffi::{c_char, c_void, CStr};
use std::sync::OnceLock;

/// oxnet's version as major*10000 + minor*100 + patch (what `initialize` receives).
pub(crate) fn host_version() -> i32 {
    let mut parts = env!("CARGO_PKG_VERSION").split('.').map(|p| p.parse::<i32>().unwrap_or(0));
    let (a, b, c) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    a * 10000 + b * 100 + c
}

struct HostTable(abi::Host);
// SAFETY: the table holds only a null pointer and a function pointer.
unsafe impl Sync for HostTable {}
unsafe impl Send for HostTable {}

/// The table handed to every library (it lives for the process).
pub(crate) fn host_table() -> *const abi::Host {
    static HOST: OnceLock<HostTable> = OnceLock::new();
    &HOST
        .get_or_init(|| {
            HostTable(abi::Host {
                abi_version: abi::ABI_VERSION,
                struct_size: std::mem::size_of::<abi::Host>() as u32,
                host_version: host_version(),
                resource_size: std::mem::size_of::<abi::Resource>() as u32,
                tensor_size: std::mem::size_of::<abi::DLTensor>() as u32,
                shape_size: std::mem::size_of::<abi::Shape>() as u32,
                host_data: std::ptr::null_mut(),
                log: Some(log),
            })
        })
        .0
}

/// Reads a C string a library handed over (lossy UTF-8; empty for NULL).
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string.
pub(crate) unsafe fn c_str(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

unsafe extern "C" fn log(_host: *mut c_void, level: i32, message: *const c_char) {
    let text = c_str(message);
    let kind = if level >= 1 { "warning" } else { "info" };
    eprintln!("oxnet extension {kind}: {text}");
}

/// Collects the message of one call.
#[derive(Default)]
pub(crate) struct ErrorSink {
    message: String,
}

unsafe extern "C" fn set_message(host: *mut c_void, message: *const c_char) {
    if host.is_null() {
        return;
    }
    // SAFETY: `host` is the ErrorSink of the current call (see `ErrorSink::abi`).
    let sink = &mut *(host as *mut ErrorSink);
    let text = c_str(message);
    if !sink.message.is_empty() {
        sink.message.push_str("; ");
    }
    sink.message.push_str(text.trim_end());
}

impl ErrorSink {
    /// The ABI view of this sink; valid while `self` is neither moved nor dropped.
    pub(crate) fn abi(&mut self) -> abi::Error {
        abi::Error { host_data: self as *mut ErrorSink as *mut c_void, set_message: Some(set_message) }
    }

    /// The failure of a callback that returned `status`: `what` and the
    /// library's message (or a note that it gave none).
    pub(crate) fn failure(&self, what: &str, status: i32) -> oxnet_core::Error {
        let msg = if self.message.is_empty() {
            format!("{what} failed (status {status}) without a message")
        } else {
            format!("{what} failed: {}", self.message)
        };
        oxnet_core::Error::Custom { msg, source: None }
    }
}

/// Calls `f` with a fresh error sink; a nonzero status becomes an error
/// naming `what` with the library's message.
pub(crate) fn checked(what: &str, f: impl FnOnce(*mut abi::Error) -> i32) -> oxnet_core::Result<()> {
    let mut sink = ErrorSink::default();
    let mut err = sink.abi();
    let status = f(&mut err);
    if status == abi::OK {
        Ok(())
    } else {
        Err(sink.failure(what, status))
    }
}
