//! [`SingleProcess`]: the world of a program started without a launcher.

use super::{Buffer, Communicator};
use oxnet_core::{Error, Result};

/// A world of one rank: sums and broadcasts leave buffers as they are, an
/// all-gather returns this rank's bytes alone.
#[derive(Clone, Copy, Debug, Default)]
pub struct SingleProcess;

impl Communicator for SingleProcess {
    fn rank(&self) -> usize {
        0
    }

    fn size(&self) -> usize {
        1
    }

    fn local_rank(&self) -> usize {
        0
    }

    fn local_size(&self) -> usize {
        1
    }

    fn describe(&self) -> String {
        "single process".into()
    }

    fn allreduce_sum(&self, _buffer: Buffer<'_>) -> Result<()> {
        Ok(())
    }

    fn broadcast_bytes(&self, _bytes: &mut [u8], root: usize) -> Result<()> {
        check_root(root, 1)
    }

    fn allgather_bytes(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        Ok(vec![mine.to_vec()])
    }

    fn barrier(&self) -> Result<()> {
        Ok(())
    }

    fn abort(&self, code: i32) -> ! {
        std::process::exit(code)
    }

    fn finalize(&self) -> Result<()> {
        Ok(())
    }

    fn duplicate(&self) -> Result<std::sync::Arc<dyn Communicator>> {
        Ok(std::sync::Arc::new(SingleProcess))
    }

    fn concurrent(&self) -> bool {
        true
    }
}

/// An error unless `root` is a rank of a world of `size`.
pub(crate) fn check_root(root: usize, size: usize) -> Result<()> {
    if root >= size {
        return Err(Error::Invalid(format!(
            "broadcast: root rank {root} is not a rank of a world of {size}"
        )));
    }
    Ok(())
}
