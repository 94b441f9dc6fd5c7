//! The caching allocator's bookkeeping, apart from any device: blocks are
//! rounded to size classes, freed blocks wait in per-class free lists and
//! are handed out again before the driver is asked for more.
//!
//! Reuse is safe because every kernel and copy of a device runs on that
//! device's one stream: work queued with a block that was freed and handed
//! out again runs after all earlier work that used it.

use crate::Result;
use std::collections::BTreeMap;

/// Blocks below this size are rounded up to a multiple of [`SMALL_ROUND`].
pub const SMALL_LIMIT: usize = 1 << 20;
/// The rounding of small blocks (bytes).
pub const SMALL_ROUND: usize = 512;
/// The rounding of large blocks (bytes).
pub const LARGE_ROUND: usize = 2 << 20;

/// The size class of a request of `bytes` bytes: at least [`SMALL_ROUND`],
/// a multiple of it below [`SMALL_LIMIT`], a multiple of [`LARGE_ROUND`]
/// from there on.
pub fn size_class(bytes: usize) -> usize {
    let bytes = bytes.max(1);
    if bytes < SMALL_LIMIT {
        bytes.div_ceil(SMALL_ROUND) * SMALL_ROUND
    } else {
        bytes.div_ceil(LARGE_ROUND) * LARGE_ROUND
    }
}

/// Where a pool's blocks come from: the driver on a real device.
pub trait RawAllocator {
    /// Allocates `bytes` bytes; the address is never 0.
    fn allocate(&mut self, bytes: usize) -> Result<u64>;
    /// Frees a block [`allocate`](Self::allocate) returned.
    fn free(&mut self, address: u64, bytes: usize);
}

/// Byte counts of a pool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Bytes in blocks handed out and not yet returned.
    pub in_use: usize,
    /// Bytes in freed blocks kept for reuse.
    pub cached: usize,
    /// How many times the driver was asked for memory.
    pub driver_allocations: usize,
}

/// A caching allocator over a [`RawAllocator`].
pub struct BlockPool<A: RawAllocator> {
    raw: A,
    free: BTreeMap<usize, Vec<u64>>,
    stats: PoolStats,
}

impl<A: RawAllocator> BlockPool<A> {
    /// An empty pool drawing from `raw`.
    pub fn new(raw: A) -> Self {
        BlockPool { raw, free: BTreeMap::new(), stats: PoolStats::default() }
    }

    /// A block of at least `bytes` bytes: its address and its size class
    /// (which [`release`](Self::release) takes back). A cached block of the
    /// class is reused; otherwise the driver allocates, and where it fails
    /// the cache is emptied and the allocation tried once more.
    pub fn acquire(&mut self, bytes: usize) -> Result<(u64, usize)> {
        let class = size_class(bytes);
        if let Some(list) = self.free.get_mut(&class) {
            if let Some(address) = list.pop() {
                if list.is_empty() {
                    self.free.remove(&class);
                }
                self.stats.cached -= class;
                self.stats.in_use += class;
                return Ok((address, class));
            }
        }
        let address = match self.raw.allocate(class) {
            Ok(a) => a,
            Err(_) => {
                self.empty_cache();
                self.raw.allocate(class)?
            }
        };
        self.stats.driver_allocations += 1;
        self.stats.in_use += class;
        Ok((address, class))
    }

    /// Returns a block to the cache.
    pub fn release(&mut self, address: u64, class: usize) {
        self.stats.in_use -= class;
        self.stats.cached += class;
        self.free.entry(class).or_default().push(address);
    }

    /// Gives every cached block back to the driver.
    pub fn empty_cache(&mut self) {
        for (class, list) in std::mem::take(&mut self.free) {
            for address in list {
                self.raw.free(address, class);
            }
        }
        self.stats.cached = 0;
    }

    /// The pool's byte counts.
    pub fn stats(&self) -> PoolStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    /// A host-side allocator that hands out increasing addresses and fails
    /// beyond a byte budget, recording what it frees.
    struct Budget {
        next: u64,
        live: usize,
        limit: usize,
        freed: Vec<(u64, usize)>,
    }

    impl RawAllocator for Budget {
        fn allocate(&mut self, bytes: usize) -> Result<u64> {
            if self.live + bytes > self.limit {
                return Err(Error::Device("out of memory".into()));
            }
            self.live += bytes;
            self.next += bytes as u64;
            Ok(self.next)
        }
        fn free(&mut self, address: u64, bytes: usize) {
            self.live -= bytes;
            self.freed.push((address, bytes));
        }
    }

    fn pool(limit: usize) -> BlockPool<Budget> {
        BlockPool::new(Budget { next: 0x1000, live: 0, limit, freed: vec![] })
    }

    #[test]
    fn size_classes_round_small_and_large_blocks() {
        assert_eq!(size_class(0), 512);
        assert_eq!(size_class(1), 512);
        assert_eq!(size_class(512), 512);
        assert_eq!(size_class(513), 1024);
        assert_eq!(size_class((1 << 20) - 1), 1 << 20);
        assert_eq!(size_class(1 << 20), 2 << 20);
        assert_eq!(size_class((2 << 20) + 1), 4 << 20);
    }

    #[test]
    fn freed_blocks_are_reused_by_class() {
        let mut p = pool(1 << 30);
        let (a, ca) = p.acquire(1000).unwrap();
        let (b, _) = p.acquire(3000).unwrap();
        assert_eq!(ca, 1024);
        p.release(a, ca);
        assert_eq!(p.stats(), PoolStats { in_use: 3072, cached: 1024, driver_allocations: 2 });
        // same class: the cached block comes back, no driver call
        let (c, cc) = p.acquire(600).unwrap();
        assert_eq!((c, cc), (a, 1024));
        assert_eq!(p.stats().driver_allocations, 2);
        // another class: a new block
        let (d, _) = p.acquire(100).unwrap();
        assert!(d != a && d != b);
        assert_eq!(p.stats().driver_allocations, 3);
    }

    #[test]
    fn a_failed_allocation_empties_the_cache_and_retries() {
        let mut p = pool(4 << 20);
        let (a, ca) = p.acquire(3 << 20).unwrap();
        p.release(a, ca);
        // 4 MiB cached, nothing left in the budget: the cache goes back first
        let (_, cb) = p.acquire(2 << 20).unwrap();
        assert_eq!(cb, 2 << 20);
        assert_eq!(p.raw.freed, vec![(a, 4 << 20)]);
        assert_eq!(p.stats(), PoolStats { in_use: 2 << 20, cached: 0, driver_allocations: 2 });
        // beyond the budget even with an empty cache: the error comes through
        assert!(p.acquire(3 << 20).is_err());
    }
}
