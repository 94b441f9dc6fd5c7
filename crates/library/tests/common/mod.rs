//! Builds the example extension libraries for the tests (shared by every
//! test file of this crate; the C++ SDK tests call `build_cpp_example`).
//!
//! Everything is built under `<repo>/target/ext-examples`, once per test
//! process, and serialised so that parallel tests never race on a file.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

static BUILD_LOCK: Mutex<()> = Mutex::new(());

/// The repository's root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repository root")
}

/// Where the examples are built.
pub fn out_dir() -> PathBuf {
    let d = repo_root().join("target/ext-examples");
    std::fs::create_dir_all(&d).expect("create target/ext-examples");
    d
}

fn lib_file(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{}{name}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX))
}

fn run(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Builds the Rust examples (`examples/extensions/rust`, release) once and
/// returns the path of `lib<name>.so`.
pub fn build_rust_example(name: &str) -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let dir = BUILT.get_or_init(|| {
        let _g = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let target = out_dir().join("rust");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        run(
            Command::new(cargo)
                .args(["build", "--release", "--quiet", "--manifest-path"])
                .arg(repo_root().join("examples/extensions/rust/Cargo.toml"))
                .env("CARGO_TARGET_DIR", &target)
                .env_remove("RUSTFLAGS"),
            "building the Rust extension examples",
        );
        target.join("release")
    });
    let path = lib_file(dir, name);
    assert!(path.is_file(), "{} was not built", path.display());
    path
}

/// Compiles C or C++ `sources` into `lib<name>.so` with `compiler` and `flags`.
/// Compiles `sources` with `compiler` and `flags` (plus `-shared -fPIC -O2
/// -I include`) into `target/ext-examples/native/lib<name>.so`, serialised
/// with the other builds and moved into place only once complete.
pub fn build_native(compiler: &str, flags: &[&str], sources: &[PathBuf], name: &str) -> PathBuf {
    let _g = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let dir = out_dir().join("native");
    std::fs::create_dir_all(&dir).unwrap();
    let out = lib_file(&dir, name);
    let tmp = dir.join(format!("{name}.{}.tmp", std::process::id()));
    let mut cmd = Command::new(compiler);
    cmd.args(flags).args(["-shared", "-fPIC", "-O2", "-I"]).arg(repo_root().join("include"));
    cmd.args(sources).arg("-o").arg(&tmp);
    run(&mut cmd, &format!("compiling {name}"));
    std::fs::rename(&tmp, &out).unwrap();
    out
}

/// Compiles the C example `examples/extensions/c/<name>.c`.
pub fn build_c_example(name: &str) -> PathBuf {
    static DONE: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
    cached(&DONE, name, || {
        let src = repo_root().join(format!("examples/extensions/c/{name}.c"));
        build_native("cc", &["-std=c99", "-Wall", "-Werror"], &[src], name)
    })
}

/// Compiles a test library from `tests/fixtures/faults.c` with `-D<define>`
/// (e.g. `FAULT_VERSION`, or `NONE` for a loadable one) whose first operator
/// is named `op_name`; the library file is named after `op_name`.
pub fn build_fault(define: &str, op_name: &str) -> PathBuf {
    static DONE: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
    cached(&DONE, op_name, || {
        let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/faults.c");
        let def = format!("-D{define}");
        let name = format!("-DOP_NAME=\"{op_name}\"");
        build_native("cc", &["-std=c99", "-Wall", "-Werror", &def, &name], &[src], &format!("fx_{op_name}"))
    })
}

/// Compiles the C++ example `<name>` with `g++ -std=c++17 -shared -fPIC -I include`:
/// `examples/extensions/cpp/<name>.cc`, or every `.cc` file of
/// `examples/extensions/cpp/<name>/`.
pub fn build_cpp_example(name: &str) -> PathBuf {
    static DONE: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
    cached(&DONE, name, || {
        let base = repo_root().join("examples/extensions/cpp");
        let single = base.join(format!("{name}.cc"));
        let sources: Vec<PathBuf> = if single.is_file() {
            vec![single]
        } else {
            let mut v: Vec<PathBuf> = std::fs::read_dir(base.join(name))
                .unwrap_or_else(|e| panic!("no C++ example `{name}`: {e}"))
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|x| x == "cc" || x == "cpp"))
                .collect();
            v.sort();
            v
        };
        build_native("g++", &["-std=c++17", "-Wall"], &sources, name)
    })
}

fn cached(done: &Mutex<Vec<(String, PathBuf)>>, key: &str, build: impl FnOnce() -> PathBuf) -> PathBuf {
    let mut d = done.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = d.iter().find(|(k, _)| k == key) {
        return p.clone();
    }
    let p = build();
    d.push((key.to_string(), p.clone()));
    p
}

/// MXNet 1.9.1's extension-library SDK: the two files a library written for
/// MXNet compiles with (they come only with MXNet's wheel).
#[derive(Debug, Clone)]
pub struct MxnetSdk {
    /// The folder holding `mxnet/lib_api.h` (what `-I` needs for `#include "mxnet/lib_api.h"`).
    pub include: PathBuf,
    /// MXNet's `lib_api.cc`, which every such library compiles in.
    pub lib_api_cc: PathBuf,
}

impl MxnetSdk {
    /// The folder holding `lib_api.h` itself (for sources that `#include "lib_api.h"`).
    pub fn header_dir(&self) -> PathBuf {
        self.include.join("mxnet")
    }
}

/// The reason printed by every test that needs MXNet's SDK and does not find it.
pub const MXNET_SKIP_REASON: &str = "skipped: MXNet 1.9.1's lib_api.h/lib_api.cc not found (run python3 \
     scripts/fetch_mxnet_sdk.py, or set MXNET_SDK)";

/// Finds MXNet's SDK, in order: the folder `$MXNET_SDK` (laid out like
/// `target/mxnet-sdk`: `include/mxnet/lib_api.h`, `src/lib_api.cc`); the
/// folder `$MXNET_INCLUDE` holding `lib_api.h` (the older variable, pointing
/// into an installed wheel: `lib_api.cc` is then `../../src/lib_api.cc`);
/// `target/mxnet-sdk` (made by `scripts/fetch_mxnet_sdk.py`); the wheel
/// installed in `.venv-mxnet`.
pub fn mxnet_sdk() -> Option<MxnetSdk> {
    let in_layout = |root: PathBuf| {
        let sdk = MxnetSdk { include: root.join("include"), lib_api_cc: root.join("src/lib_api.cc") };
        (sdk.header_dir().join("lib_api.h").is_file() && sdk.lib_api_cc.is_file()).then_some(sdk)
    };
    if let Some(dir) = std::env::var_os("MXNET_SDK") {
        return in_layout(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("MXNET_INCLUDE") {
        // <wheel>/mxnet/include/mxnet: the package folder is two levels up
        let dir = PathBuf::from(dir);
        return dir.parent().and_then(|include| in_layout(include.parent()?.to_path_buf()));
    }
    if let Some(sdk) = in_layout(repo_root().join("target/mxnet-sdk")) {
        return Some(sdk);
    }
    let mut venvs: Vec<PathBuf> = std::fs::read_dir(repo_root().join(".venv-mxnet/lib"))
        .ok()?
        .filter_map(|e| Some(e.ok()?.path().join("site-packages/mxnet")))
        .collect();
    venvs.sort();
    venvs.into_iter().find_map(in_layout)
}

/// The folder holding MXNet's `lib_api.h`, for checks that need the header
/// only: `$MXNET_INCLUDE` as given (unless `$MXNET_SDK` is set), else the
/// SDK's.
pub fn mxnet_header_dir() -> Option<PathBuf> {
    if std::env::var_os("MXNET_SDK").is_none() {
        if let Some(dir) = std::env::var_os("MXNET_INCLUDE") {
            return Some(PathBuf::from(dir));
        }
    }
    mxnet_sdk().map(|sdk| sdk.header_dir())
}

/// Prints why `test` does not run (once per call; `cargo test -- --nocapture` shows it).
pub fn skip_without_mxnet(test: &str) {
    println!("{test}: {MXNET_SKIP_REASON}");
}
