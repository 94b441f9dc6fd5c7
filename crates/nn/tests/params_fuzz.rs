//! Property test: mutated parameter files (byte flips, truncations, inserted
//! and deleted bytes, size fields overwritten with odd values) never panic
//! the readers of either format, and whatever they accept is a list of
//! arrays whose data fits in the bytes read (no allocation a corrupt size
//! field asked for). `PROPTEST_CASES` sets how many cases run.

use oxnet_core::half::f16;
use oxnet_core::{DType, Device, NDArray};
use oxnet_nn::io::{self, ParamList};
use proptest::prelude::*;
use std::path::PathBuf;

/// Valid files to mutate: MXNet-written fixtures and oxnet-written lists in
/// both formats (V2 and V3 records, named and unnamed, several dtypes).
fn seeds() -> &'static [Vec<u8>] {
    static SEEDS: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    SEEDS.get_or_init(make_seeds)
}

fn make_seeds() -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/params");
    let mut out: Vec<Vec<u8>> = ["mlp.params", "dtypes.params", "np_shape.params", "mlp-0000.params"]
        .iter()
        .map(|f| std::fs::read(dir.join(f)).unwrap())
        .collect();
    let named = ParamList::Named(vec![
        ("w".into(), NDArray::from_vec(vec![1.0f32, -2.0, 3.5, 4.0], &[2, 2]).unwrap()),
        ("scalar".into(), NDArray::scalar(7i64)),
        ("empty".into(), NDArray::zeros(&[0, 4], DType::F64, Device::Cpu).unwrap()),
        ("h".into(), NDArray::from_vec(vec![f16::from_f32(1.0); 3], &[3]).unwrap()),
    ]);
    let unnamed = ParamList::Unnamed(vec![
        NDArray::from_vec(vec![1u8, 2, 3], &[3]).unwrap(),
        NDArray::from_vec(vec![true, false], &[2, 1]).unwrap(),
    ]);
    for list in [&named, &unnamed] {
        out.push(io::to_bytes(list).unwrap());
        out.push(io::safetensors_to_bytes(list).unwrap());
    }
    out
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip {
        at: usize,
        bit: u8,
    },
    Set {
        at: usize,
        value: u8,
    },
    Truncate {
        len: usize,
    },
    Insert {
        at: usize,
        bytes: Vec<u8>,
    },
    Delete {
        at: usize,
        len: usize,
    },
    /// Overwrites 8 (or 4) bytes at `at` with a size-like value.
    SizeField {
        at: usize,
        value: u64,
        wide: bool,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let odd_sizes = prop_oneof![
        Just(0u64),
        Just(1),
        Just(u64::MAX),
        Just(u64::MAX / 2),
        Just(1 << 32),
        Just(0xFFFF_FFFF),
        Just(0x8000_0000),
        Just(0xF993_FAC8),
        Just(0xF993_FAC9),
        Just(0xF993_FACA),
        0u64..64,
        any::<u64>(),
    ];
    prop_oneof![
        (any::<usize>(), 0u8..8).prop_map(|(at, bit)| Mutation::Flip { at, bit }),
        (any::<usize>(), any::<u8>()).prop_map(|(at, value)| Mutation::Set { at, value }),
        any::<usize>().prop_map(|len| Mutation::Truncate { len }),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        (any::<usize>(), 1usize..16).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<usize>(), odd_sizes, any::<bool>()).prop_map(|(at, value, wide)| Mutation::SizeField {
            at,
            value,
            wide
        }),
    ]
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    let n = bytes.len();
    match m {
        Mutation::Flip { at, bit } if n > 0 => bytes[at % n] ^= 1 << bit,
        Mutation::Set { at, value } if n > 0 => bytes[at % n] = *value,
        Mutation::Truncate { len } => bytes.truncate(len % (n + 1)),
        Mutation::Insert { at, bytes: ins } => {
            let at = at % (n + 1);
            bytes.splice(at..at, ins.iter().copied());
        }
        Mutation::Delete { at, len } if n > 0 => {
            let at = at % n;
            let end = (at + len).min(n);
            bytes.drain(at..end);
        }
        Mutation::SizeField { at, value, wide } => {
            let width = if *wide { 8 } else { 4 };
            if n >= width {
                // size fields sit at multiples of 4 in both formats' headers
                let at = (at % (n - width + 1)) & !3;
                let v = value.to_le_bytes();
                bytes[at..at + width].copy_from_slice(&v[..width]);
            }
        }
        _ => {}
    }
}

/// Whatever a reader accepts must be usable and no larger than its input.
fn check_accepted(list: &ParamList, input_len: usize) {
    let mut data = 0usize;
    for a in list.arrays() {
        data += a.size() * a.dtype().size();
        let v = a.to_vec::<f64>().unwrap();
        assert_eq!(v.len(), a.size());
    }
    assert!(data <= input_len, "{data} data bytes from a {input_len}-byte file");
    // and it writes again, in both formats
    io::from_bytes(&io::to_bytes(list).unwrap()).unwrap();
    io::from_bytes(&io::safetensors_to_bytes(list).unwrap()).unwrap();
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn mutated_files_never_panic(seed in any::<prop::sample::Index>(), muts in prop::collection::vec(mutation(), 1..4)) {
        let seeds = seeds();
        let mut bytes = seeds[seed.index(seeds.len())].clone();
        for m in &muts {
            apply(&mut bytes, m);
        }
        if let Ok(list) = io::from_bytes(&bytes) {
            check_accepted(&list, bytes.len());
        }
        if let Ok(list) = io::safetensors_from_bytes(&bytes) {
            check_accepted(&list, bytes.len());
        }
    }

    #[test]
    fn every_truncation_of_a_valid_file_is_an_error(seed in any::<prop::sample::Index>(), cut in any::<prop::sample::Index>()) {
        let seeds = seeds();
        let bytes = &seeds[seed.index(seeds.len())];
        let len = cut.index(bytes.len());
        // a prefix misses at least the last name or tensor byte
        prop_assert!(io::from_bytes(&bytes[..len]).is_err());
    }
}
