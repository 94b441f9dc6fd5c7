//! Calls into MXNet-style libraries inside a C++ frame that stops their
//! exceptions (`cxx.cc`, compiled by the build script).

use std::ffi::{c_char, c_int, c_void, CStr};

extern "C" {
    fn oxnet_mxnet_guard(
        body: unsafe extern "C-unwind" fn(context: *mut c_void),
        context: *mut c_void,
        message: *mut c_char,
        capacity: usize,
    ) -> c_int;
}

/// The longest exception message kept.
const MESSAGE_CAPACITY: usize = 2048;

struct Call<F, R> {
    f: Option<F>,
    out: Option<R>,
}

unsafe extern "C-unwind" fn body<F: FnOnce() -> R, R>(context: *mut c_void) {
    // SAFETY: `context` is the `Call` of `guarded`, alive during this call.
    let call = &mut *(context as *mut Call<F, R>);
    if let Some(f) = call.f.take() {
        call.out = Some(f());
    }
}

/// Runs `f` (a call of a library function) inside the C++ guard; a C++
/// exception thrown in it becomes `Err` with the exception's message.
///
/// `f` must not panic: a Rust panic must not unwind into the C++ frame. Keep
/// it to the foreign call itself.
pub(crate) fn guarded<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    fn run<F: FnOnce() -> R, R>(f: F) -> Result<R, String> {
        let mut call = Call { f: Some(f), out: None };
        let mut message = [0 as c_char; MESSAGE_CAPACITY];
        // SAFETY: `body::<F, R>` matches `call`'s type; the buffer's capacity is passed.
        let status = unsafe {
            oxnet_mxnet_guard(
                body::<F, R>,
                &mut call as *mut Call<F, R> as *mut c_void,
                message.as_mut_ptr(),
                MESSAGE_CAPACITY,
            )
        };
        // SAFETY: the guard NUL-terminates what it copied; the buffer starts zeroed.
        let text = unsafe { CStr::from_ptr(message.as_ptr()) }.to_string_lossy().into_owned();
        match (status, call.out) {
            (0, Some(out)) => Ok(out),
            (0, None) => Err("the call did not run".into()),
            (1, _) => Err(format!("C++ exception: {text}")),
            _ => Err(format!("C++ exception ({text})")),
        }
    }
    run(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C-unwind" {
        fn oxnet_mxnet_guard_test_throw(kind: c_int);
    }

    #[test]
    fn a_returning_call_gives_its_value() {
        assert_eq!(guarded(|| 41 + 1), Ok(42));
    }

    #[test]
    fn a_cpp_exception_becomes_its_message() {
        let err = guarded(|| unsafe { oxnet_mxnet_guard_test_throw(1) }).unwrap_err();
        assert_eq!(err, "C++ exception: thrown for the guard's test");
        let err = guarded(|| unsafe { oxnet_mxnet_guard_test_throw(2) }).unwrap_err();
        assert!(err.contains("not a std::exception"), "{err}");
        // The guard is reusable after an exception.
        assert_eq!(guarded(|| 3), Ok(3));
    }
}
