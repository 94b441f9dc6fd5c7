//! All-reduce sweep of the Rust communication layer: one float32 array of
//! 4 B ... 64 MiB summed over the ranks of an MPI job, through
//! `collectives::allreduce_sum` (the array's own memory) and through the
//! communicator on a plain `Vec<f32>` (MPI alone), beside a memcpy of the
//! same size; and 100 arrays of 1,000 float32 fused into one message.
//! Prints a table from rank 0 (medians, microseconds; bus bandwidth
//! 2 (n - 1) / n * bytes / time).
//!
//! `cargo build --release -p oxnet-nn --features mpi --example allreduce_sweep`
//! then `mpirun -np 2 --mca pml ob1 --mca btl self,sm target/release/examples/allreduce_sweep`
//! (bench/allreduce.sh runs it).

use oxnet_core::{DType, Device, NDArray, Result};
use oxnet_nn::distributed::{self, collectives, Buffer, Communicator};
use std::time::Instant;

fn median_us(comm: &dyn Communicator, repeat: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    let mut times = Vec::with_capacity(repeat);
    for _ in 0..repeat {
        comm.barrier()?;
        let start = Instant::now();
        f()?;
        times.push(start.elapsed().as_secs_f64() * 1e6);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[repeat / 2])
}

fn main() -> Result<()> {
    distributed::run(|comm| {
        let comm = comm.as_ref();
        let n = comm.size() as f64;
        let mut lines = vec![format!(
            "{:>10} {:>10} {:>10} {:>10} {:>11} {:>9}",
            "bytes", "oxnet us", "raw us", "memcpy us", "oxnet GB/s", "raw/oxnet"
        )];
        for exponent in (0..25).step_by(2) {
            let count = 1usize << exponent;
            let bytes = 4 * count;
            let repeat = if bytes <= 65536 {
                300
            } else if bytes <= 4 << 20 {
                60
            } else {
                10
            };
            let array = NDArray::ones(&[count], DType::F32, Device::Cpu)?;
            let mut raw = vec![1.0f32; count];
            let source = vec![1.0f32; count];
            let ours = median_us(comm, repeat, || collectives::allreduce_sum(comm, &[array.clone()]))?;
            let theirs = median_us(comm, repeat, || comm.allreduce_sum(Buffer::F32(&mut raw)))?;
            let copy = median_us(comm, repeat, || {
                raw.copy_from_slice(&source);
                Ok(())
            })?;
            let bus = 2.0 * (n - 1.0) / n * bytes as f64;
            lines.push(format!(
                "{bytes:10} {ours:10.1} {theirs:10.1} {copy:10.1} {:11.3} {:9.2}",
                bus / (ours * 1e-6) / 1e9,
                theirs / ours
            ));
        }
        let grads: Vec<NDArray> =
            (0..100).map(|_| NDArray::ones(&[1000], DType::F32, Device::Cpu)).collect::<Result<_>>()?;
        let mut packed = vec![1.0f32; 100 * 1000];
        let floor = median_us(comm, 200, || comm.allreduce_sum(Buffer::F32(&mut packed)))?;
        let fused = median_us(comm, 200, || collectives::allreduce_sum(comm, &grads))?;
        lines.push(format!("100 x 1k float32: fused {fused:.1} us, one packed Vec {floor:.1} us"));
        if comm.rank() == 0 {
            println!("{} ranks over {}", comm.size(), comm.describe());
            for line in lines {
                println!("{line}");
            }
        }
        Ok(())
    })
}
