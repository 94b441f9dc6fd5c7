//! Built-in operators that gather by index: `take` (with its scatter-add
//! gradient `_backward_take`), `pick`, `one_hot`, `where` and
//! `fill_element_0index` and `batch_take`.

mod batch_take;
mod fill_element;
mod pick;
mod take;

/// Registers this module's operators.
pub(crate) fn register() {
    take::register();
    pick::register();
    fill_element::register();
    batch_take::register();
}
