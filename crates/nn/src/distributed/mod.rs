//! Data-parallel training over processes (ranks): the communication layer.
//!
//! Every rank runs the same program on its share of each batch; the
//! [`Trainer`](crate::trainer::Trainer) given a [`Communicator`] (see
//! [`Trainer::set_communicator`](crate::trainer::Trainer::set_communicator))
//! starts every rank from rank 0's parameters and sums the gradients over
//! all ranks before each update, as MXNet's `dist_sync` key-value store.
//!
//! - [`Communicator`]: one interface for the collectives (sum in place,
//!   broadcast, all-gather, barrier) on host buffers, and this process's
//!   rank, the world's size and the ranks on this machine.
//! - [`SingleProcess`]: a world of one, where every collective is the
//!   identity (a program started without a launcher).
//! - `mpi::MpiCommunicator` (cargo feature `mpi`): MPI (Open MPI or MPICH),
//!   its library loaded at run time; building needs no MPI.
//! - [`collectives`]: the collectives on [`NDArray`](oxnet_core::NDArray)s
//!   of any dtype, layout or device, with small arrays packed into one
//!   message.
//! - [`world`], [`run`], [`finalize`]: this process's communicator and the
//!   way to end a job, or abort all of it when one rank fails.
//! - [`overlap`]: summing gradients while the backward pass still runs
//!   (the trainer's communication thread).
//!
//! ```
//! use oxnet_core::NDArray;
//! use oxnet_nn::distributed::{self, collectives};
//!
//! distributed::run(|comm| {
//!     let x = NDArray::from_vec(vec![1.0f32, 2.0], &[2])?;
//!     collectives::allreduce_sum(comm.as_ref(), &[x.clone()])?; // a world of one: unchanged
//!     assert_eq!(x.to_vec::<f32>()?, vec![1.0, 2.0]);
//!     assert_eq!((comm.rank(), comm.size()), (0, 1));
//!     Ok(())
//! })
//! .unwrap();
//! ```

pub mod collectives;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod overlap;
mod single;

pub use single::SingleProcess;

use oxnet_core::{DType, Error, Result};
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, OnceLock};

/// The element types collectives sum natively.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum ElemType {
    /// 32-bit float.
    F32 = 0,
    /// 64-bit float.
    F64 = 1,
    /// 32-bit signed integer.
    I32 = 2,
    /// 64-bit signed integer.
    I64 = 3,
    /// 8-bit unsigned integer.
    U8 = 4,
    /// 8-bit signed integer.
    I8 = 5,
}

impl ElemType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            ElemType::F32 | ElemType::I32 => 4,
            ElemType::F64 | ElemType::I64 => 8,
            ElemType::U8 | ElemType::I8 => 1,
        }
    }

    /// The type a `dtype` array is summed in: itself, or float32 for
    /// float16 and bfloat16 (no MPI sums those); None for booleans.
    pub fn summing(dtype: DType) -> Option<ElemType> {
        Some(match dtype {
            DType::F32 | DType::F16 | DType::BF16 => ElemType::F32,
            DType::F64 => ElemType::F64,
            DType::I32 => ElemType::I32,
            DType::I64 => ElemType::I64,
            DType::U8 => ElemType::U8,
            DType::I8 => ElemType::I8,
            DType::Bool => return None,
        })
    }

    /// The array dtype with these elements.
    pub fn dtype(self) -> DType {
        match self {
            ElemType::F32 => DType::F32,
            ElemType::F64 => DType::F64,
            ElemType::I32 => DType::I32,
            ElemType::I64 => DType::I64,
            ElemType::U8 => DType::U8,
            ElemType::I8 => DType::I8,
        }
    }
}

/// A host buffer a collective sums in place.
#[derive(Debug)]
pub enum Buffer<'a> {
    /// 32-bit floats.
    F32(&'a mut [f32]),
    /// 64-bit floats.
    F64(&'a mut [f64]),
    /// 32-bit integers.
    I32(&'a mut [i32]),
    /// 64-bit integers.
    I64(&'a mut [i64]),
    /// Unsigned bytes.
    U8(&'a mut [u8]),
    /// Signed bytes.
    I8(&'a mut [i8]),
}

impl Buffer<'_> {
    /// The element type.
    pub fn elem(&self) -> ElemType {
        match self {
            Buffer::F32(_) => ElemType::F32,
            Buffer::F64(_) => ElemType::F64,
            Buffer::I32(_) => ElemType::I32,
            Buffer::I64(_) => ElemType::I64,
            Buffer::U8(_) => ElemType::U8,
            Buffer::I8(_) => ElemType::I8,
        }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        match self {
            Buffer::F32(s) => s.len(),
            Buffer::F64(s) => s.len(),
            Buffer::I32(s) => s.len(),
            Buffer::I64(s) => s.len(),
            Buffer::U8(s) => s.len(),
            Buffer::I8(s) => s.len(),
        }
    }

    /// True when it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first element's address, the element count and type (what a
    /// transport hands to MPI).
    pub fn raw_parts(&mut self) -> (*mut u8, usize, ElemType) {
        let elem = self.elem();
        let len = self.len();
        let ptr = match self {
            Buffer::F32(s) => s.as_mut_ptr().cast(),
            Buffer::F64(s) => s.as_mut_ptr().cast(),
            Buffer::I32(s) => s.as_mut_ptr().cast(),
            Buffer::I64(s) => s.as_mut_ptr().cast(),
            Buffer::U8(s) => s.as_mut_ptr(),
            Buffer::I8(s) => s.as_mut_ptr().cast(),
        };
        (ptr, len, elem)
    }

    /// Multiplies every element by `factor` (integers truncate toward zero).
    pub fn scale(&mut self, factor: f64) {
        if factor == 1.0 {
            return;
        }
        match self {
            Buffer::F32(s) => s.iter_mut().for_each(|v| *v = (*v as f64 * factor) as f32),
            Buffer::F64(s) => s.iter_mut().for_each(|v| *v *= factor),
            Buffer::I32(s) => s.iter_mut().for_each(|v| *v = (*v as f64 * factor) as i32),
            Buffer::I64(s) => s.iter_mut().for_each(|v| *v = (*v as f64 * factor) as i64),
            Buffer::U8(s) => s.iter_mut().for_each(|v| *v = (*v as f64 * factor) as u8),
            Buffer::I8(s) => s.iter_mut().for_each(|v| *v = (*v as f64 * factor) as i8),
        }
    }
}

/// Collectives over the ranks of one job, on host memory.
///
/// Every rank calls the same collectives in the same order with buffers of
/// the same sizes (all-gather excepted); [`collectives::agree`] checks that
/// cheaply where a mismatch would otherwise hang or truncate.
pub trait Communicator: Send + Sync {
    /// This process's rank, from 0.
    fn rank(&self) -> usize;
    /// The number of ranks.
    fn size(&self) -> usize;
    /// This process's rank among the ranks on its machine.
    fn local_rank(&self) -> usize;
    /// The number of ranks on this machine.
    fn local_size(&self) -> usize;
    /// What carries the messages (`single process`, the MPI library's version).
    fn describe(&self) -> String;
    /// Sums `buffer` elementwise over every rank, in place.
    fn allreduce_sum(&self, buffer: Buffer<'_>) -> Result<()>;
    /// Replaces `bytes` on every rank by rank `root`'s.
    fn broadcast_bytes(&self, bytes: &mut [u8], root: usize) -> Result<()>;
    /// Every rank's `mine`, in rank order (lengths may differ).
    fn allgather_bytes(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>>;
    /// Returns once every rank has called it.
    fn barrier(&self) -> Result<()>;
    /// Ends every rank of the job with exit status `code`.
    fn abort(&self, code: i32) -> !;
    /// Ends the communication layer in this process (nothing for a world
    /// of one); call once, after the last collective.
    fn finalize(&self) -> Result<()>;
    /// A communicator over the same ranks whose collectives never match
    /// this one's (MPI's `MPI_Comm_dup`; every rank calls it together), so
    /// that another thread can run collectives beside this one's, as the
    /// [`Trainer`](crate::trainer::Trainer)'s communication thread does.
    /// By default an error: the communicator cannot.
    fn duplicate(&self) -> Result<Arc<dyn Communicator>> {
        Err(Error::Invalid(format!("the communicator ({}) cannot be duplicated", self.describe())))
    }
    /// Whether collectives may run on several threads at once (on
    /// duplicates of this communicator).
    fn concurrent(&self) -> bool {
        false
    }
}

/// Environment variables that MPI launchers (Open MPI's `mpirun`, MPICH's
/// Hydra, PMIx, MVAPICH, Intel MPI) set in the processes they start.
pub const LAUNCHER_VARIABLES: [&str; 5] =
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MV2_COMM_WORLD_SIZE", "MPI_LOCALNRANKS"];

/// True when an MPI launcher started this process (one of
/// [`LAUNCHER_VARIABLES`] is set), or `OXNET_COMM=mpi` says so;
/// `OXNET_COMM=single` says it is not.
pub fn launched_by_mpi() -> bool {
    match std::env::var("OXNET_COMM").as_deref() {
        Ok("mpi") => true,
        Ok("single") => false,
        _ => LAUNCHER_VARIABLES.iter().any(|v| std::env::var_os(v).is_some()),
    }
}

static WORLD: OnceLock<std::result::Result<Arc<dyn Communicator>, String>> = OnceLock::new();

/// This process's communicator, made on first use: MPI when an MPI launcher
/// started the process ([`launched_by_mpi`]), a [`SingleProcess`]
/// otherwise. An error says why MPI cannot be used (oxnet-nn built without
/// its `mpi` feature, no MPI library found); `OXNET_COMM` other than `mpi`
/// or `single` is an error too.
///
/// With more than one rank, a panic on any rank prints it with the rank and
/// aborts the whole job, so the other ranks do not wait for it for ever.
pub fn world() -> Result<Arc<dyn Communicator>> {
    WORLD.get_or_init(|| make_world().map_err(|e| e.to_string())).clone().map_err(Error::Invalid)
}

fn make_world() -> Result<Arc<dyn Communicator>> {
    match std::env::var("OXNET_COMM").as_deref() {
        Ok("mpi") | Ok("single") | Err(_) => {}
        Ok(other) => {
            return Err(Error::Invalid(format!("OXNET_COMM is `{other}`; it may be `mpi` or `single`")));
        }
    }
    if !launched_by_mpi() {
        return Ok(Arc::new(SingleProcess));
    }
    let comm = open_mpi_world()?;
    if comm.size() > 1 {
        abort_job_on_panic(comm.clone());
    }
    Ok(comm)
}

#[cfg(feature = "mpi")]
fn open_mpi_world() -> Result<Arc<dyn Communicator>> {
    Ok(Arc::new(mpi::MpiCommunicator::open(None)?))
}

#[cfg(not(feature = "mpi"))]
fn open_mpi_world() -> Result<Arc<dyn Communicator>> {
    Err(Error::Invalid(
        "this process was started by an MPI launcher, but oxnet-nn was built without its `mpi` feature: \
         build with `--features oxnet-nn/mpi` (or set OXNET_COMM=single to run each process alone)"
            .into(),
    ))
}

/// Makes a panic on this rank print its message with the rank, then abort
/// every rank of the job.
fn abort_job_on_panic(comm: Arc<dyn Communicator>) {
    let previous = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        eprintln!("oxnet: rank {} of {} failed:", comm.rank(), comm.size());
        previous(info);
        comm.abort(1);
    }));
}

/// Runs one rank's part of a job: `job` gets this process's communicator
/// ([`world`]). When it succeeds, the communication layer is finalized; when
/// it returns an error on a job of several ranks, the error is printed with
/// this rank and every rank is aborted (exit status 1), so that no rank
/// waits for this one for ever. In a world of one the error is returned.
pub fn run<T>(job: impl FnOnce(&Arc<dyn Communicator>) -> Result<T>) -> Result<T> {
    let comm = world()?;
    match panic::catch_unwind(AssertUnwindSafe(|| job(&comm))) {
        Ok(Ok(value)) => {
            comm.finalize()?;
            Ok(value)
        }
        Ok(Err(e)) if comm.size() > 1 => {
            eprintln!("oxnet: rank {} of {} failed: {e}", comm.rank(), comm.size());
            comm.abort(1)
        }
        Ok(Err(e)) => Err(e),
        Err(payload) => panic::resume_unwind(payload),
    }
}

/// Finalizes this process's communicator when one was made (see
/// [`Communicator::finalize`]); for programs that use [`world`] without
/// [`run`].
pub fn finalize() -> Result<()> {
    match WORLD.get() {
        Some(Ok(comm)) => comm.finalize(),
        _ => Ok(()),
    }
}
