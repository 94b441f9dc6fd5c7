//! `random::seed` makes draws repeat: random arrays and Dropout's masks.
//! (Alone in this file because reseeding the process-wide generator while
//! other tests draw from it would interleave their draws with these.)

use oxnet_core::{autograd, invoke1, random, DType, NDArray};
use oxnet_ops as _; // the built-in operators these tests call
use std::sync::{Mutex, MutexGuard};

/// The two tests below reseed and draw; each holds this lock throughout.
static RNG_LOCK: Mutex<()> = Mutex::new(());

fn rng_lock() -> MutexGuard<'static, ()> {
    RNG_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn random_arrays_repeat_after_reseeding() {
    let _rng = rng_lock();
    let draw = || {
        let u = NDArray::random_uniform(-1.0, 1.0, &[100], DType::F32).unwrap().to_vec::<f32>().unwrap();
        let n = NDArray::random_normal(0.0, 1.0, &[1000], DType::F64).unwrap().to_vec::<f64>().unwrap();
        (u, n)
    };
    random::seed(42);
    let (u1, n1) = draw();
    random::seed(42);
    let (u2, n2) = draw();
    assert_eq!(u1, u2);
    assert_eq!(n1, n2);
    assert!(u1.iter().all(|v| (-1.0..1.0).contains(v)));
    let mean = n1.iter().sum::<f64>() / 1000.0;
    assert!(mean.abs() < 0.15, "mean {mean}");
    random::seed(43);
    assert_ne!(draw().0, u1, "another seed draws other values");
}

#[test]
fn dropout_masks_repeat_after_reseeding() {
    let _rng = rng_lock();
    let x = NDArray::full(&[5000], 1.0, DType::F32, Default::default()).unwrap();
    let run = |seed| {
        random::seed(seed);
        let _t = autograd::train_mode();
        invoke1("Dropout", &[&x], &[]).unwrap().to_vec::<f32>().unwrap()
    };
    let a = run(1234);
    assert_eq!(run(1234), a, "two runs after seed(1234) differ");
    assert!(a.contains(&0.0) && a.contains(&2.0), "p = 0.5 drops some and scales the rest by 2");
    assert_ne!(run(99), a);
}
