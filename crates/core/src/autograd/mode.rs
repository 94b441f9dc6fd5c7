//! Recording and train-mode flags, per thread, with scope guards.

use std::cell::Cell;

thread_local! {
    static RECORDING: Cell<bool> = const { Cell::new(false) };
    static TRAINING: Cell<bool> = const { Cell::new(false) };
}

/// True while operator calls are recorded for differentiation.
#[inline]
pub fn is_recording() -> bool {
    RECORDING.with(Cell::get)
}

/// True in train mode (Dropout active, custom ops get `is_train`).
#[inline]
pub fn is_training() -> bool {
    TRAINING.with(Cell::get)
}

/// Sets the recording flag; returns the previous value.
pub fn set_recording(on: bool) -> bool {
    RECORDING.with(|c| c.replace(on))
}

/// Sets the train-mode flag; returns the previous value.
pub fn set_training(on: bool) -> bool {
    TRAINING.with(|c| c.replace(on))
}

/// Restores both flags when dropped.
#[must_use = "the scope ends when the guard is dropped"]
pub struct ModeGuard {
    recording: bool,
    training: bool,
}

impl Drop for ModeGuard {
    fn drop(&mut self) {
        set_recording(self.recording);
        set_training(self.training);
    }
}

fn scope(recording: Option<bool>, training: Option<bool>) -> ModeGuard {
    let guard = ModeGuard { recording: is_recording(), training: is_training() };
    if let Some(r) = recording {
        set_recording(r);
    }
    if let Some(t) = training {
        set_training(t);
    }
    guard
}

/// Records operator calls in train mode until the guard drops (`autograd.record()`).
pub fn record() -> ModeGuard {
    scope(Some(true), Some(true))
}

/// Records with an explicit train-mode flag (`autograd.record(train_mode=...)`).
pub fn record_with(train_mode: bool) -> ModeGuard {
    scope(Some(true), Some(train_mode))
}

/// Stops recording (and, like MXNet's default, leaves train mode) until the guard drops.
pub fn pause() -> ModeGuard {
    scope(Some(false), Some(false))
}

/// Train mode without changing recording.
pub fn train_mode() -> ModeGuard {
    scope(None, Some(true))
}

/// Predict (inference) mode without changing recording.
pub fn predict_mode() -> ModeGuard {
    scope(None, Some(false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_nest_and_restore() {
        assert!(!is_recording());
        {
            let _r = record();
            assert!(is_recording() && is_training());
            {
                let _p = pause();
                assert!(!is_recording() && !is_training());
                let _t = train_mode();
                assert!(is_training());
            }
            assert!(is_recording() && is_training());
            let _pm = predict_mode();
            assert!(is_recording() && !is_training());
        }
        assert!(!is_recording() && !is_training());
    }
}
