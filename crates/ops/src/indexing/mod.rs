//! Built-in operators that gather by index: `take` (with its scatter-add
//! gradient `_backward_take`), `pick`, `one_hot` and `where`.

mod pick;
mod take;

/// Registers this module's operators.
pub(crate) fn register() {
    take::register();
    pick::register();
}
