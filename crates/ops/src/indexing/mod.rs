//! Built-in operators that gather by index: `take` (with its scatter-add
//! gradient `_backward_take`), `pick`, `one_hot`, `where` and
//! `fill_element_0index` and `batch_take`; `gather_nd` / `scatter_nd`,
//! `ravel_multi_index` / `unravel_index`, and the contrib `index_array`,
//! `index_copy` and `boolean_mask`.

mod batch_take;
mod contrib_index;
mod fill_element;
mod gather_nd;
pub(crate) mod pick;
mod ravel;
mod take;

/// Registers this module's operators.
pub(crate) fn register() {
    take::register();
    pick::register();
    fill_element::register();
    batch_take::register();
    gather_nd::register();
    ravel::register();
    contrib_index::register();
}
