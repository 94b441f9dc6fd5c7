//! Every way a library can be refused: each a clear error naming the file,
//! and the registry left as it was.

mod common;

use oxnet_core::{invoke1, registry, NDArray};
use std::path::PathBuf;

fn load_err(path: &std::path::Path) -> String {
    oxnet_library::load(path, false).expect_err("the load must fail").to_string()
}

#[test]
fn wrong_abi_version_is_refused_naming_both_versions() {
    let path = common::build_fault("FAULT_VERSION", "fault_version");
    let err = load_err(&path);
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(err.contains("ABI version 42") && err.contains("speaks version 1"), "{err}");
    assert!(!registry::contains("fault_version"));
}

#[test]
fn missing_entry_point_is_refused() {
    let path = common::build_fault("FAULT_NO_ENTRY", "fault_no_entry");
    let err = load_err(&path);
    assert!(
        err.contains("exports neither `oxnet_ext_entry` nor MXNet's `_opVersion`")
            && err.contains("fault_no_entry"),
        "{err}"
    );
    assert!(!registry::contains("fault_no_entry"));
}

#[test]
fn initialize_refusing_is_an_error_with_its_message() {
    let path = common::build_fault("FAULT_INIT", "fault_init");
    let err = load_err(&path);
    assert!(err.contains("refused") && err.contains("needs oxnet 9.9 or newer"), "{err}");
    assert!(!registry::contains("fault_init"));
}

#[test]
fn one_bad_descriptor_refuses_the_whole_library() {
    let path = common::build_fault("FAULT_SIZE", "fault_size_first");
    let err = load_err(&path);
    assert!(err.contains("struct_size"), "{err}");
    assert!(!registry::contains("fault_size_first"));
    assert!(!registry::contains("fault_size_second"));
}

#[test]
fn a_name_taken_by_a_builtin_is_refused() {
    let path = common::build_fault("NONE", "relu");
    let err = load_err(&path);
    assert!(err.contains("`relu`") && err.contains("already registered"), "{err}");
    // the built-in is untouched
    let x = NDArray::from_vec(vec![-1.0f32, 1.0], &[2]).unwrap();
    assert_eq!(invoke1("relu", &[&x], &[]).unwrap().to_vec::<f32>().unwrap(), vec![0.0, 1.0]);
}

#[test]
fn a_file_that_is_no_library_is_refused() {
    let dir = common::out_dir().join("native");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("libnot_a_library{}", std::env::consts::DLL_SUFFIX));
    std::fs::write(&path, "this is text, not machine code\n").unwrap();
    let err = load_err(&path);
    assert!(err.contains("not a loadable shared library") && err.contains("libnot_a_library"), "{err}");
}

#[test]
fn bad_paths_are_refused() {
    let err = load_err(&PathBuf::from("relative/libx.so"));
    assert!(err.contains("must be absolute"), "{err}");
    let err = load_err(&common::repo_root().join("Cargo.toml"));
    assert!(err.contains("must end with"), "{err}");
    let err = load_err(&common::repo_root().join(format!("no_such{}", std::env::consts::DLL_SUFFIX)));
    assert!(err.contains("no such file"), "{err}");
}

#[test]
fn a_failing_kernel_reports_its_message_for_that_call() {
    let path = common::build_fault("NONE", "fault_runtime");
    oxnet_library::load(&path, false).unwrap();
    let x = NDArray::from_vec(vec![1.0f32], &[1]).unwrap();
    let err = invoke1("fault_runtime", &[&x], &[]).unwrap_err().to_string();
    assert!(err.contains("operator `fault_runtime`") && err.contains("always fails in forward"), "{err}");
    // the message belongs to that call only: the next failure carries one copy
    let err2 = invoke1("fault_runtime", &[&x], &[]).unwrap_err().to_string();
    assert_eq!(err, err2);
}
