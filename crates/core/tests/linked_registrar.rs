//! A user's operator crate registers its operators the way oxnet-ops
//! registers the built-ins: a registrar named with `register_operators!`,
//! which the registry runs on its first use. A registrar that panics is
//! skipped, with the operators it registered before the panic kept.

use oxnet_core::{invoke1, registry, NDArray, OpDef};

fn register_doubling() {
    registry::register(OpDef::new("linked_double").alias("linked_twice").forward(|_ctx, ins, outs| {
        let x = ins[0].as_slice::<f64>()?;
        outs[0].as_mut_slice::<f64>()?.iter_mut().zip(x).for_each(|(y, x)| *y = 2.0 * x);
        Ok(())
    }));
}
oxnet_core::register_operators!(register_doubling);

fn register_then_panic() {
    registry::register(OpDef::new("linked_before_panic").forward(|_, _, _| Ok(())));
    panic!("a registrar's bug");
}
oxnet_core::register_operators!(register_then_panic);

#[test]
fn linked_registrars_run_before_the_first_lookup() {
    assert!(registry::operator_crates_linked());
    assert_eq!(registry::REGISTRARS.len(), 2);
    let x = NDArray::from_vec(vec![1.5f64, -2.0], &[2]).unwrap();
    assert_eq!(invoke1("linked_double", &[&x], &[]).unwrap().to_vec::<f64>().unwrap(), vec![3.0, -4.0]);
    assert_eq!(invoke1("linked_twice", &[&x], &[]).unwrap().to_vec::<f64>().unwrap(), vec![3.0, -4.0]);
    assert!(registry::contains("Custom"));
}

#[test]
fn a_panicking_registrar_is_skipped_and_the_registry_stays_usable() {
    assert!(registry::contains("linked_before_panic"));
    assert!(registry::contains("linked_double"));
    let err = registry::get("sigmoid").unwrap_err().to_string();
    assert!(err.contains("unknown operator `sigmoid`") && err.contains("list_ops"), "{err}");
}
