//! The Rust mirror and `include/oxnet/oxnet_ext.h` agree: a C program
//! compiled with the system's `cc` prints each struct's size and alignment,
//! which must equal the Rust ones, and the header's constants equal the crate's.

use std::path::PathBuf;
use std::process::Command;

#[test]
fn struct_layouts_match_the_c_header() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::env::temp_dir().join(format!("oxnet_abi_layout_{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let mut src = String::from(
        "#include \"oxnet/oxnet_ext.h\"\n#include <stdio.h>\n#include <stdalign.h>\nint main(void) {\n",
    );
    for (name, _, _) in oxnet_abi::LAYOUT_64 {
        src.push_str(&format!("  printf(\"%zu %zu\\n\", sizeof({name}), alignof({name}));\n"));
    }
    for c in [
        "OXNET_EXT_ABI_VERSION",
        "OXNET_EXT_MAX_NDIM",
        "OXNET_EXT_REQ_NULL",
        "OXNET_EXT_REQ_WRITE",
        "OXNET_EXT_REQ_INPLACE",
        "OXNET_EXT_REQ_ADD",
        "OXNET_EXT_DTYPE_FLOAT32",
        "OXNET_EXT_DTYPE_INT64",
        "OXNET_EXT_DTYPE_BFLOAT16",
        "OXNET_EXT_OK",
        "(int)kDLCPU",
    ] {
        src.push_str(&format!("  printf(\"%d\\n\", (int)({c}));\n"));
    }
    src.push_str("  printf(\"%s\\n\", OXNET_EXT_ENTRY_NAME);\n  return 0;\n}\n");
    let c_file = out.join("layout.c");
    std::fs::write(&c_file, src).unwrap();
    let exe = out.join("layout");
    let status = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Werror", "-I"])
        .arg(root.join("include"))
        .arg(&c_file)
        .arg("-o")
        .arg(&exe)
        .status()
        .expect("a C compiler `cc` is needed to check the ABI layout");
    assert!(status.success(), "the C header does not compile");
    let printed = Command::new(&exe).output().unwrap();
    let text = String::from_utf8(printed.stdout).unwrap();
    let mut lines = text.lines();
    let rust = oxnet_abi::rust_layout();
    for (i, (name, _, _)) in oxnet_abi::LAYOUT_64.iter().enumerate() {
        let line = lines.next().unwrap();
        let mut it = line.split(' ').map(|s| s.parse::<usize>().unwrap());
        let (size, align) = (it.next().unwrap(), it.next().unwrap());
        assert_eq!((size, align), rust[i], "{name}: C (size, align) vs Rust");
    }
    let consts: Vec<i64> = (0..11).map(|_| lines.next().unwrap().parse().unwrap()).collect();
    assert_eq!(
        consts,
        vec![
            oxnet_abi::ABI_VERSION as i64,
            oxnet_abi::MAX_NDIM as i64,
            oxnet_abi::REQ_NULL as i64,
            oxnet_abi::REQ_WRITE as i64,
            oxnet_abi::REQ_INPLACE as i64,
            oxnet_abi::REQ_ADD as i64,
            oxnet_abi::DTYPE_FLOAT32 as i64,
            oxnet_abi::DTYPE_INT64 as i64,
            oxnet_abi::DTYPE_BFLOAT16 as i64,
            oxnet_abi::OK as i64,
            oxnet_abi::K_DL_CPU as i64,
        ]
    );
    assert_eq!(lines.next().unwrap(), oxnet_abi::ENTRY_NAME);
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn dtype_codes_round_trip_through_dlpack() {
    for code in [0, 1, 2, 3, 4, 5, 6, 7, 12] {
        let dl = oxnet_abi::dl_dtype_of(code).unwrap();
        assert_eq!(oxnet_abi::dtype_code_of(dl), Some(code));
    }
    assert_eq!(oxnet_abi::dl_dtype_of(99), None);
    let f32_2lanes = oxnet_abi::DLDataType { code: oxnet_abi::K_DL_FLOAT, bits: 32, lanes: 2 };
    assert_eq!(oxnet_abi::dtype_code_of(f32_2lanes), None);
}
