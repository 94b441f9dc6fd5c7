use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

#[test]
fn every_index_runs_once() {
    for tasks in [0, 1, 2, 3, 17, 1000] {
        let hits: Vec<AtomicUsize> = (0..tasks).map(|_| AtomicUsize::new(0)).collect();
        for_each(tasks, |i| {
            hits[i].fetch_add(1, Ordering::Relaxed);
        });
        assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1), "tasks = {tasks}");
    }
}

#[test]
fn chunks_cover_the_slice_in_order() {
    let mut v: Vec<usize> = vec![0; 1001];
    for_each_chunk_mut(&mut v, 100, |c, part| {
        for (j, x) in part.iter_mut().enumerate() {
            *x = c * 100 + j;
        }
    });
    assert_eq!(v, (0..1001).collect::<Vec<_>>());
}

#[test]
fn map_keeps_order() {
    assert_eq!(map(50, |i| i * i), (0..50).map(|i| i * i).collect::<Vec<_>>());
}

#[test]
fn nested_calls_run_inline() {
    let total = AtomicUsize::new(0);
    for_each(8, |_| {
        for_each(8, |j| {
            total.fetch_add(j, Ordering::Relaxed);
        });
    });
    assert_eq!(total.into_inner(), 8 * 28);
}

#[test]
fn calls_from_many_threads_all_complete() {
    let total = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..200 {
                    for_each(4, |i| {
                        total.fetch_add(i + 1, Ordering::Relaxed);
                    });
                }
            });
        }
    });
    assert_eq!(total.into_inner(), 4 * 200 * 10);
}

#[test]
fn first_error_is_returned() {
    let r = try_for_each(100, |i| if i == 37 { Err(i) } else { Ok(()) });
    assert_eq!(r, Err(37));
    assert_eq!(try_for_each(100, |_| Ok::<(), ()>(())), Ok(()));
}

#[test]
fn a_panic_reaches_the_caller_and_the_pool_stays_usable() {
    let caught = std::panic::catch_unwind(|| {
        for_each(16, |i| {
            if i == 5 {
                panic!("task five");
            }
        })
    });
    let payload = caught.expect_err("the panic must reach the caller");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"task five"));
    let total = AtomicUsize::new(0);
    for_each(16, |i| {
        total.fetch_add(i, Ordering::Relaxed);
    });
    assert_eq!(total.into_inner(), 120);
}

#[test]
fn helpers_wake_from_sleep() {
    // A pool whose helpers sleep at once still runs every task.
    let pool: &'static pool::Pool = Box::leak(Box::new(pool::Pool::new(3, std::time::Duration::ZERO)));
    pool.start();
    for _ in 0..50 {
        std::thread::sleep(std::time::Duration::from_micros(200));
        let total = AtomicUsize::new(0);
        pool.run(10, &|i| {
            total.fetch_add(i, Ordering::Relaxed);
        });
        assert_eq!(total.into_inner(), 45);
    }
}
