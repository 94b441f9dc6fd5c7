//! Helpers for shape inference over partially known shapes, where a
//! dimension of 0 is an unknown extent (MXNet's legacy convention; see
//! `OpDef::infer_shape_partial`).

use oxnet_core::shape::{merge_partial, Shape};
use oxnet_core::{Error, Result};

/// Merges `want` into `slot`: an unknown slot takes it, a known one learns
/// its unknown dimensions from it; a different rank or a different known
/// dimension is an error naming `what`.
pub(crate) fn merge(slot: &mut Option<Shape>, want: &[usize], what: &str) -> Result<()> {
    match slot {
        None => {
            *slot = Some(Shape::from_slice(want));
            Ok(())
        }
        Some(have) => {
            let before = have.clone();
            merge_partial(have, want).map_err(|_| {
                Error::Shape(format!("{what} has shape {}, expected {}", show(&before), show(want)))
            })
        }
    }
}

/// Merges one dimension: 0 is unknown.
pub(crate) fn merge_dim(a: usize, b: usize, what: &str) -> Result<usize> {
    match (a, b) {
        (0, x) | (x, 0) => Ok(x),
        (x, y) if x == y => Ok(x),
        (x, y) => Err(Error::Shape(format!("{what}: extents {x} and {y} must be equal"))),
    }
}

/// The product of `dims`, or 0 when one is unknown.
pub(crate) fn product(dims: &[usize]) -> usize {
    if dims.contains(&0) {
        0
    } else {
        dims.iter().product()
    }
}

/// A partial shape as MXNet prints it: unknown dimensions as `?`.
pub(crate) fn show(s: &[usize]) -> String {
    let dims: Vec<String> = s.iter().map(|&d| if d == 0 { "?".into() } else { d.to_string() }).collect();
    if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_fills_unknown_dimensions_and_names_conflicts() {
        let mut slot = Some(Shape::from_slice(&[0, 10]));
        merge(&mut slot, &[12, 0], "input `a`").unwrap();
        assert_eq!(slot.as_deref(), Some(&[12, 10][..]));
        let mut none = None;
        merge(&mut none, &[0, 3], "x").unwrap();
        assert_eq!(none.as_deref(), Some(&[0, 3][..]));
        let err = merge(&mut slot, &[13, 10], "input `a`").unwrap_err().to_string();
        assert!(err.contains("input `a` has shape (12, 10), expected (13, 10)"), "{err}");
        assert!(merge(&mut slot, &[12], "a").is_err());
        assert_eq!(merge_dim(0, 4, "k").unwrap(), 4);
        assert!(merge_dim(3, 4, "k").unwrap_err().to_string().contains("3 and 4"));
        assert_eq!(product(&[2, 0, 3]), 0);
        assert_eq!(product(&[2, 3]), 6);
        assert_eq!(show(&[0, 5]), "(?, 5)");
    }
}
