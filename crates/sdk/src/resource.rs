//! The call's resource: workspace memory and random numbers seeded from
//! oxnet's global seed.

use crate::abi;
use crate::traits::OpResult;

/// What a kernel may use besides its tensors.
pub struct Resource<'a> {
    raw: Option<&'a abi::Resource>,
}

impl<'a> Resource<'a> {
    /// Wraps the ABI resource of the current call.
    pub(crate) fn new(raw: *const abi::Resource) -> Resource<'a> {
        // SAFETY: the host passes a valid resource (or NULL) for the call.
        Resource { raw: unsafe { raw.as_ref() } }
    }

    /// True in training mode.
    pub fn is_train(&self) -> bool {
        self.raw.is_some_and(|r| r.is_train != 0)
    }

    /// `n` zeroed elements of CPU workspace, valid for this call (each call
    /// a distinct region, freed by oxnet afterwards).
    pub fn workspace<T: crate::Element + Default>(&mut self, n: usize) -> OpResult<&'a mut [T]> {
        let raw = self.raw.ok_or("no resource was given to this call")?;
        let alloc = raw.alloc_cpu.ok_or("the host offers no CPU workspace")?;
        let bytes = n.checked_mul(std::mem::size_of::<T>()).ok_or("workspace size overflows")?;
        // SAFETY: host callback with its own pointer.
        let p = unsafe { alloc(raw.host_data, bytes as u64) } as *mut T;
        if p.is_null() {
            return Err(format!("the host could not allocate {bytes} bytes of workspace"));
        }
        // SAFETY: a fresh, 64-byte aligned region of `bytes` bytes owned by this call.
        let s = unsafe { std::slice::from_raw_parts_mut(p, n) };
        s.iter_mut().for_each(|v| *v = T::default());
        Ok(s)
    }

    /// A fresh seed drawn from oxnet's global generator: reseeding oxnet
    /// (`oxnet_core::random::seed`, `mx.random.seed`) repeats the draws.
    pub fn random_seed(&mut self) -> OpResult<u64> {
        let raw = self.raw.ok_or("no resource was given to this call")?;
        let f = raw.random_seed.ok_or("the host offers no random seed")?;
        // SAFETY: host callback with its own pointer.
        Ok(unsafe { f(raw.host_data) })
    }

    /// A CPU random generator seeded from [`random_seed`](Self::random_seed).
    pub fn rng(&mut self) -> OpResult<Rng> {
        Ok(Rng::new(self.random_seed()?))
    }

    /// The CUDA stream of the call (null on CPU).
    pub fn cuda_stream(&self) -> *mut std::ffi::c_void {
        self.raw.map(|r| r.cuda_stream).unwrap_or(std::ptr::null_mut())
    }
}

/// A small, fast generator (xoshiro256**) for plugins.
#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator from a seed (expanded with SplitMix64).
    pub fn new(seed: u64) -> Rng {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Rng { s: [next(), next(), next(), next()] }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// A uniform draw in `[0, 1)`.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A uniform `f32` in `[low, high)`.
    pub fn uniform_f32(&mut self, low: f32, high: f32) -> f32 {
        low + (high - low) * ((self.next_u64() >> 40) as f32 * (1.0 / (1u32 << 24) as f32))
    }
}
