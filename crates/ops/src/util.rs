//! Helpers shared by the built-in operators' kernels and gradient rules,
//! made of oxnet-core's public API only.

use oxnet_core::{AttrValue, Attrs, Error, NDArray, Req, Result};

/// Calls operator `name` with one output (shorthand for gradient rules).
pub fn call(name: &str, inputs: &[&NDArray], attrs: &[(&str, AttrValue)]) -> Result<NDArray> {
    oxnet_core::invoke1(name, inputs, attrs)
}

/// Calls operator `name` with attributes already parsed for an operator of
/// the same attribute specs (a gradient rule calling its `_backward_`
/// operator, or the operator itself, with the forward call's attributes);
/// returns the first output.
pub fn call_parsed(name: &str, inputs: &[&NDArray], attrs: &Attrs) -> Result<NDArray> {
    let op = oxnet_core::registry::get(name)?;
    let mut outs = oxnet_core::invoke_op(&op, inputs, attrs)?;
    if outs.is_empty() {
        return Err(Error::Invalid(format!("operator `{name}` has no outputs")));
    }
    Ok(outs.swap_remove(0))
}

/// Calls operator `name` writing its one output into `out` (request
/// `write`): a gradient rule computing into an offered buffer
/// ([`GradInto::compute_into`](oxnet_core::GradInto::compute_into)).
pub fn call_into(name: &str, inputs: &[&NDArray], attrs: &[(&str, AttrValue)], out: &NDArray) -> Result<()> {
    let op = oxnet_core::registry::get(name)?;
    let parsed = op.parse_attrs(attrs)?;
    oxnet_core::invoke_into(&op, inputs, &parsed, std::slice::from_ref(out), &[Req::Write])
}

/// Parses a tuple of floats as Python writes it: `(0.1, 0.2)`, `[0.1,0.2]`,
/// `0.1`, also `[np.float64(0.1), ...]`.
pub(crate) fn parse_floats(name: &str, text: &str) -> Result<Vec<f64>> {
    oxnet_core::attrs::tuple_items(text)
        .map(|p| {
            // numpy scalars print as `np.float64(0.1)`
            let bare = match (p.find('('), p.strip_suffix(')')) {
                (Some(open), Some(body)) => &body[open + 1..],
                _ => p,
            };
            bare.parse::<f64>()
                .map_err(|_| Error::attr(name, format!("expected a tuple of numbers, got `{text}`")))
        })
        .collect()
}
