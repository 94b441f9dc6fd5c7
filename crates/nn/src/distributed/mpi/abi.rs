//! The dozen MPI functions oxnet calls, found in the MPI library at run
//! time, for the two binary interfaces MPI libraries have.
//!
//! MPI fixes its functions' C signatures but not the types of its handles:
//! Open MPI's `MPI_Comm`, `MPI_Datatype` and `MPI_Op` are pointers to its
//! predefined objects (`MPI_COMM_WORLD` is `&ompi_mpi_comm_world`), while
//! MPICH and the libraries derived from it (Intel MPI, MVAPICH, Cray MPICH)
//! use 32-bit integers with fixed values. [`Api`] is generic over the handle
//! type; [`load`] tells the two apart by Open MPI's exported symbols and
//! returns the matching instance behind [`Transport`].
//!
//! Loading at run time rather than linking means a build needs neither MPI
//! headers nor libclang (the `mpi` crate's bindings need both), and one
//! binary runs with whichever MPI launched it.

use crate::distributed::ElemType;
use libloading::os::unix::{Library, Symbol, RTLD_GLOBAL, RTLD_NOW};
use oxnet_core::{Error, Result};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::Arc;

/// What one MPI library offers oxnet: its world's ranks and the
/// collectives over the world, on raw host memory.
pub(crate) trait Transport: Send + Sync {
    /// This process's rank and the world's size.
    fn world(&self) -> (usize, usize);
    /// Rank and size among the processes on this machine.
    fn node(&self) -> (usize, usize);
    /// The library's own description (`MPI_Get_library_version`).
    fn version(&self) -> &str;
    /// The thread level MPI granted (3 is `MPI_THREAD_MULTIPLE`).
    fn thread_level(&self) -> i32;
    /// Sums `count` elements at `data` over every rank, in place.
    ///
    /// # Safety
    /// `data` holds `count` writable elements of `elem`.
    unsafe fn allreduce_sum(&self, data: *mut u8, count: usize, elem: ElemType) -> Result<()>;
    /// Copies `bytes` bytes at `data` from rank `root` to every rank.
    ///
    /// # Safety
    /// `data` holds `bytes` writable bytes.
    unsafe fn broadcast(&self, data: *mut u8, bytes: usize, root: usize) -> Result<()>;
    /// Every rank's bytes, in rank order (lengths may differ).
    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>>;
    /// Waits until every rank has called it.
    fn barrier(&self) -> Result<()>;
    /// Ends every rank of the job with `code`.
    fn abort(&self, code: i32) -> !;
    /// Ends MPI in this process (when oxnet started it).
    fn finalize(&self) -> Result<()>;
    /// The same ranks over a new communicator (`MPI_Comm_dup`, a
    /// collective): its collectives never match this one's, so another
    /// thread may run them at the same time (at `MPI_THREAD_MULTIPLE`).
    fn duplicate(&self) -> Result<Box<dyn Transport>>;
}

/// An Open MPI handle: the address of a predefined object, or one MPI made.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub(crate) struct Pointer(*mut c_void);
// SAFETY: MPI handles are opaque names, valid from any thread MPI allows.
unsafe impl Send for Pointer {}
// SAFETY: as above; oxnet never dereferences them.
unsafe impl Sync for Pointer {}

type Fn0 = unsafe extern "C" fn() -> c_int;
type FnIntPtr = unsafe extern "C" fn(*mut c_int) -> c_int;

/// The functions and constants of one binary interface, `H` being its
/// handle type.
pub(crate) struct Api<H> {
    init_thread: unsafe extern "C" fn(*mut c_int, *mut *mut *mut c_char, c_int, *mut c_int) -> c_int,
    finalize: Fn0,
    finalized: FnIntPtr,
    comm_rank: unsafe extern "C" fn(H, *mut c_int) -> c_int,
    comm_size: unsafe extern "C" fn(H, *mut c_int) -> c_int,
    comm_split_type: unsafe extern "C" fn(H, c_int, c_int, H, *mut H) -> c_int,
    comm_dup: unsafe extern "C" fn(H, *mut H) -> c_int,
    allreduce: unsafe extern "C" fn(*const c_void, *mut c_void, c_int, H, H, H) -> c_int,
    bcast: unsafe extern "C" fn(*mut c_void, c_int, H, c_int, H) -> c_int,
    allgather: unsafe extern "C" fn(*const c_void, c_int, H, *mut c_void, c_int, H, H) -> c_int,
    allgatherv:
        unsafe extern "C" fn(*const c_void, c_int, H, *mut c_void, *const c_int, *const c_int, H, H) -> c_int,
    barrier: unsafe extern "C" fn(H) -> c_int,
    abort: unsafe extern "C" fn(H, c_int) -> c_int,
    error_string: unsafe extern "C" fn(c_int, *mut c_char, *mut c_int) -> c_int,
    consts: Consts<H>,
    /// The communicator the collectives run on: the world, or a duplicate of it.
    comm: H,
    /// The communicator of this machine's ranks (made at start).
    node_comm: H,
    world: (usize, usize),
    node: (usize, usize),
    version: String,
    thread_level: i32,
    /// Whether oxnet called `MPI_Init_thread` (and so must finalize);
    /// false for a duplicate.
    owns_init: bool,
    /// Keeps the functions loaded.
    _library: Arc<Library>,
}

/// The predefined handles and values oxnet uses.
#[derive(Clone, Copy)]
struct Consts<H> {
    comm_world: H,
    info_null: H,
    op_sum: H,
    byte: H,
    /// f32, f64, i32, i64, u8, i8: in [`ElemType`]'s order.
    types: [H; 6],
    /// `MPI_IN_PLACE`'s address.
    in_place: usize,
    comm_type_shared: c_int,
}

const MPI_SUCCESS: c_int = 0;
const MPI_THREAD_MULTIPLE: c_int = 3;
/// MPI counts are C ints: larger transfers go in pieces of this many elements.
const MAX_COUNT: usize = 1 << 30;

/// Loads the MPI library at `path`, starts MPI (at `MPI_THREAD_MULTIPLE`
/// when granted) unless the process already did, and learns the world.
pub(crate) fn load(path: &str) -> Result<Box<dyn Transport>> {
    // RTLD_GLOBAL: Open MPI's plugins resolve their symbols against libmpi.
    // SAFETY: loading a library runs its initialisers; an MPI library's are
    // benign, and the path is the one the user or the launcher named.
    let library = unsafe { Library::open(Some(path), RTLD_NOW | RTLD_GLOBAL) }
        .map_err(|e| Error::Invalid(format!("cannot load the MPI library `{path}`: {e}")))?;
    let version = library_version(&library, path)?;
    // SAFETY: only the symbol's presence is tested.
    let open_mpi = unsafe { library.get::<*mut c_void>(b"ompi_mpi_comm_world\0") }.is_ok();
    if open_mpi {
        // SAFETY: Open MPI's interface: handles are its objects' addresses.
        let consts = unsafe { open_mpi_consts(&library, path)? };
        Ok(Box::new(Api::<Pointer>::start(library, consts, path, version)?))
    } else {
        if !MPICH_FAMILY.iter().any(|name| version.contains(name)) {
            return Err(Error::Invalid(format!(
                "the MPI library `{path}` is neither Open MPI nor of MPICH's family (it says: {}); \
                 oxnet knows those two binary interfaces",
                version.lines().next().unwrap_or("")
            )));
        }
        Ok(Box::new(Api::<c_int>::start(library, mpich_consts(), path, version)?))
    }
}

/// Libraries sharing MPICH's binary interface, as their version strings name them.
const MPICH_FAMILY: [&str; 4] = ["MPICH", "Intel(R) MPI", "MVAPICH", "CRAY MPICH"];

/// MPICH's handle values (`mpi.h` of MPICH 4, the same since MPICH 3.x).
fn mpich_consts() -> Consts<c_int> {
    Consts {
        comm_world: 0x4400_0000,
        info_null: 0x1c00_0000,
        op_sum: 0x5800_0003,
        byte: 0x4c00_010d,
        types: [0x4c00_040a, 0x4c00_080b, 0x4c00_0439, 0x4c00_083a, 0x4c00_013b, 0x4c00_0137],
        in_place: usize::MAX, // (void *) -1
        comm_type_shared: 1,
    }
}

/// Open MPI's handles: the addresses of its exported predefined objects.
///
/// # Safety
/// `library` is Open MPI's `libmpi`.
unsafe fn open_mpi_consts(library: &Library, path: &str) -> Result<Consts<Pointer>> {
    let object = |name: &str| -> Result<Pointer> {
        let symbol = format!("{name}\0");
        // SAFETY: the symbol is a data object; only its address is kept.
        let found: Symbol<*mut c_void> = unsafe { library.get(symbol.as_bytes()) }
            .map_err(|e| Error::Invalid(format!("the Open MPI library `{path}` lacks `{name}`: {e}")))?;
        Ok(Pointer(found.into_raw()))
    };
    Ok(Consts {
        comm_world: object("ompi_mpi_comm_world")?,
        info_null: object("ompi_mpi_info_null")?,
        op_sum: object("ompi_mpi_op_sum")?,
        byte: object("ompi_mpi_byte")?,
        types: [
            object("ompi_mpi_float")?,
            object("ompi_mpi_double")?,
            object("ompi_mpi_int32_t")?,
            object("ompi_mpi_int64_t")?,
            object("ompi_mpi_uint8_t")?,
            object("ompi_mpi_int8_t")?,
        ],
        in_place: 1, // (void *) 1
        comm_type_shared: 0,
    })
}

/// `MPI_Get_library_version`, callable before `MPI_Init`.
fn library_version(library: &Library, path: &str) -> Result<String> {
    let get: unsafe extern "C" fn(*mut c_char, *mut c_int) -> c_int =
        function(library, path, "MPI_Get_library_version")?;
    // MPI_MAX_LIBRARY_VERSION_STRING is 8192 in MPICH, 256 in Open MPI.
    let mut text = vec![0 as c_char; 8192];
    let mut len: c_int = 0;
    // SAFETY: the buffer holds the largest version string any MPI writes.
    let rc = unsafe { get(text.as_mut_ptr(), &mut len) };
    if rc != MPI_SUCCESS {
        return Err(Error::Invalid(format!("MPI_Get_library_version failed in `{path}` (code {rc})")));
    }
    // SAFETY: MPI wrote a NUL-terminated string into the buffer.
    Ok(unsafe { CStr::from_ptr(text.as_ptr()) }.to_string_lossy().trim().to_string())
}

/// The function `name` of `library`, as the function pointer type `F`.
fn function<F: Copy>(library: &Library, path: &str, name: &str) -> Result<F> {
    let symbol = format!("{name}\0");
    // SAFETY: `F` is the C signature the MPI standard gives `name`.
    unsafe { library.get::<F>(symbol.as_bytes()) }
        .map(|f| *f)
        .map_err(|e| Error::Invalid(format!("the MPI library `{path}` lacks `{name}`: {e}")))
}

impl<H: Copy + Send + Sync> Api<H> {
    fn start(library: Library, consts: Consts<H>, path: &str, version: String) -> Result<Api<H>> {
        let initialized: FnIntPtr = function(&library, path, "MPI_Initialized")?;
        let query_thread: FnIntPtr = function(&library, path, "MPI_Query_thread")?;
        let mut api = Api {
            init_thread: function(&library, path, "MPI_Init_thread")?,
            finalize: function(&library, path, "MPI_Finalize")?,
            finalized: function(&library, path, "MPI_Finalized")?,
            comm_rank: function(&library, path, "MPI_Comm_rank")?,
            comm_size: function(&library, path, "MPI_Comm_size")?,
            comm_split_type: function(&library, path, "MPI_Comm_split_type")?,
            comm_dup: function(&library, path, "MPI_Comm_dup")?,
            allreduce: function(&library, path, "MPI_Allreduce")?,
            bcast: function(&library, path, "MPI_Bcast")?,
            allgather: function(&library, path, "MPI_Allgather")?,
            allgatherv: function(&library, path, "MPI_Allgatherv")?,
            barrier: function(&library, path, "MPI_Barrier")?,
            abort: function(&library, path, "MPI_Abort")?,
            error_string: function(&library, path, "MPI_Error_string")?,
            node_comm: consts.comm_world,
            comm: consts.comm_world,
            consts,
            world: (0, 1),
            node: (0, 1),
            version,
            thread_level: 0,
            owns_init: false,
            _library: Arc::new(library),
        };
        let mut flag: c_int = 0;
        // SAFETY: MPI_Initialized may be called at any time.
        api.check("MPI_Initialized", unsafe { initialized(&mut flag) })?;
        let mut level: c_int = 0;
        if flag == 0 {
            // SAFETY: argc/argv may be null since MPI-2.
            let rc = unsafe {
                (api.init_thread)(std::ptr::null_mut(), std::ptr::null_mut(), MPI_THREAD_MULTIPLE, &mut level)
            };
            api.check("MPI_Init_thread", rc)?;
            api.owns_init = true;
        } else {
            // SAFETY: MPI is initialized (by someone else in this process).
            api.check("MPI_Query_thread", unsafe { query_thread(&mut level) })?;
        }
        api.thread_level = level;
        api.world = api.rank_size(api.consts.comm_world)?;
        let mut node = api.consts.comm_world;
        // SAFETY: a collective over the world; `node` receives a new handle.
        let rc = unsafe {
            (api.comm_split_type)(
                api.consts.comm_world,
                api.consts.comm_type_shared,
                0,
                api.consts.info_null,
                &mut node,
            )
        };
        api.check("MPI_Comm_split_type", rc)?;
        api.node_comm = node;
        api.node = api.rank_size(node)?;
        Ok(api)
    }

    fn rank_size(&self, comm: H) -> Result<(usize, usize)> {
        let (mut rank, mut size) = (0, 0);
        // SAFETY: `comm` is a valid communicator.
        self.check("MPI_Comm_rank", unsafe { (self.comm_rank)(comm, &mut rank) })?;
        // SAFETY: as above.
        self.check("MPI_Comm_size", unsafe { (self.comm_size)(comm, &mut size) })?;
        Ok((rank as usize, size as usize))
    }

    /// An error naming `what` and MPI's own message for a failing code.
    fn check(&self, what: &str, rc: c_int) -> Result<()> {
        if rc == MPI_SUCCESS {
            return Ok(());
        }
        let mut text = vec![0 as c_char; 1024];
        let mut len: c_int = 0;
        // SAFETY: MPI_MAX_ERROR_STRING is at most 1024 in both libraries.
        let message = if unsafe { (self.error_string)(rc, text.as_mut_ptr(), &mut len) } == MPI_SUCCESS {
            // SAFETY: MPI wrote a NUL-terminated string.
            unsafe { CStr::from_ptr(text.as_ptr()) }.to_string_lossy().into_owned()
        } else {
            String::from("(no message)")
        };
        Err(Error::Invalid(format!("{what} failed on rank {} (MPI error {rc}: {message})", self.world.0)))
    }

    /// Runs `call(start, n)` over `total` elements in pieces of at most
    /// [`MAX_COUNT`] (MPI counts are C ints), checking each result as `what`.
    fn in_pieces(&self, what: &str, total: usize, mut call: impl FnMut(usize, c_int) -> c_int) -> Result<()> {
        let mut done = 0;
        while done < total {
            let n = (total - done).min(MAX_COUNT);
            self.check(what, call(done, n as c_int))?;
            done += n;
        }
        Ok(())
    }

    fn all_counts(&self, mine: usize) -> Result<Vec<usize>> {
        let mine = c_int::try_from(mine).map_err(|_| {
            Error::Invalid(format!("allgather: {mine} bytes from one rank is more than MPI counts"))
        })?;
        let mut counts = vec![0 as c_int; self.world.1];
        // SAFETY: one int sent, `size` ints received.
        let rc = unsafe {
            (self.allgather)(
                (&mine as *const c_int).cast(),
                1,
                self.consts.types[ElemType::I32 as usize],
                counts.as_mut_ptr().cast(),
                1,
                self.consts.types[ElemType::I32 as usize],
                self.comm,
            )
        };
        self.check("MPI_Allgather", rc)?;
        Ok(counts.into_iter().map(|c| c as usize).collect())
    }
}

impl<H: Copy + Send + Sync + 'static> Transport for Api<H> {
    fn world(&self) -> (usize, usize) {
        self.world
    }

    fn node(&self) -> (usize, usize) {
        self.node
    }

    fn version(&self) -> &str {
        &self.version
    }

    fn thread_level(&self) -> i32 {
        self.thread_level
    }

    unsafe fn allreduce_sum(&self, data: *mut u8, count: usize, elem: ElemType) -> Result<()> {
        self.in_pieces("MPI_Allreduce", count, |start, n| {
            // SAFETY: the caller's buffer holds `count` elements; this piece
            // lies inside it.
            unsafe {
                (self.allreduce)(
                    self.consts.in_place as *const c_void,
                    data.add(start * elem.size()).cast(),
                    n,
                    self.consts.types[elem as usize],
                    self.consts.op_sum,
                    self.comm,
                )
            }
        })
    }

    unsafe fn broadcast(&self, data: *mut u8, bytes: usize, root: usize) -> Result<()> {
        self.in_pieces("MPI_Bcast", bytes, |start, n| {
            // SAFETY: the caller's buffer holds `bytes` bytes; this piece
            // lies inside it.
            unsafe { (self.bcast)(data.add(start).cast(), n, self.consts.byte, root as c_int, self.comm) }
        })
    }

    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        let counts = self.all_counts(mine.len())?;
        let total: usize = counts.iter().sum();
        if total > c_int::MAX as usize {
            return Err(Error::Invalid(format!("allgather: {total} bytes in all is more than MPI counts")));
        }
        let mut displs = Vec::with_capacity(counts.len());
        let mut at = 0;
        for c in &counts {
            displs.push(at as c_int);
            at += c;
        }
        let ints: Vec<c_int> = counts.iter().map(|&c| c as c_int).collect();
        let mut all = vec![0u8; total];
        // SAFETY: `all` holds the sum of every rank's count; counts and
        // displacements have one entry per rank.
        let rc = unsafe {
            (self.allgatherv)(
                mine.as_ptr().cast(),
                mine.len() as c_int,
                self.consts.byte,
                all.as_mut_ptr().cast(),
                ints.as_ptr(),
                displs.as_ptr(),
                self.consts.byte,
                self.comm,
            )
        };
        self.check("MPI_Allgatherv", rc)?;
        let mut out = Vec::with_capacity(counts.len());
        let mut at = 0;
        for c in counts {
            out.push(all[at..at + c].to_vec());
            at += c;
        }
        Ok(out)
    }

    fn barrier(&self) -> Result<()> {
        // SAFETY: the world communicator is valid while MPI runs.
        self.check("MPI_Barrier", unsafe { (self.barrier)(self.comm) })
    }

    fn abort(&self, code: i32) -> ! {
        // SAFETY: MPI_Abort may be called at any time after MPI_Init.
        unsafe { (self.abort)(self.consts.comm_world, code) };
        // MPI_Abort does not return; should a library return, still end.
        std::process::exit(code)
    }

    fn finalize(&self) -> Result<()> {
        if !self.owns_init {
            return Ok(());
        }
        let mut done: c_int = 0;
        // SAFETY: MPI_Finalized may be called at any time.
        self.check("MPI_Finalized", unsafe { (self.finalized)(&mut done) })?;
        if done != 0 {
            return Ok(());
        }
        // SAFETY: oxnet started MPI; every rank finalizes once.
        self.check("MPI_Finalize", unsafe { (self.finalize)() })
    }

    fn duplicate(&self) -> Result<Box<dyn Transport>> {
        let mut comm = self.comm;
        // SAFETY: a collective over a valid communicator; `comm` receives a new handle.
        self.check("MPI_Comm_dup", unsafe { (self.comm_dup)(self.comm, &mut comm) })?;
        Ok(Box::new(Api {
            comm,
            owns_init: false,
            version: self.version.clone(),
            _library: self._library.clone(),
            ..*self
        }))
    }
}
