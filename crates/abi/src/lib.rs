//! # oxnet-abi
//!
//! The C ABI between oxnet and operator libraries loaded at run time.
//! It has no dependencies: plugin authors depend on this crate (or on the C
//! and C++ headers beside it) and on nothing else of oxnet's.
//!
//! This crate is the start of that ABI: it fixes the version number a
//! library and the host compare. The tables a library exports, the DLPack
//! tensor structs and the error protocol are added with the
//! extension-library loader.

/// The version of the ABI described by this crate. A host refuses a
/// library built against another version.
pub const ABI_VERSION: u32 = 1;
