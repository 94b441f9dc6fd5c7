//! The workspace's layers point downward only (DESIGN.md): abi → core →
//! ops → graph → nn → faces. Each crate may depend on crates of lower
//! layers alone; in particular oxnet-core depends on no operator crate and
//! on nothing above it, in any kind of dependency (normal, build, dev).
//! Read from `cargo metadata`, so a new dependency in any Cargo.toml is seen.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// Each workspace crate's layer. The extension SDK sits beside core on the
/// plugin side: it may use the ABI crate and nothing else of ours. The data
/// pipeline (oxnet-io: RecordIO, images, their operators) sits beside the
/// operators, on core alone. Among
/// the faces, the Python package sits on the extension-library loader; the
/// example of a user's operator crate is a face too.
const LAYERS: &[(&str, u32)] = &[
    ("oxnet-abi", 0),
    ("oxnet-core", 1),
    ("oxnet-sdk", 1),
    ("oxnet-ops", 2),
    ("oxnet-io", 2),
    ("oxnet-graph", 3),
    ("oxnet-nn", 4),
    ("oxnet-library", 5),
    ("oxnet-python", 6),
    ("oxnet-tour", 6),
    ("my_linked_ops", 6),
];

/// `(package, dependency, kind)` for every dependency of every workspace package.
fn workspace_dependencies() -> Vec<(String, String, String)> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--no-deps", "--offline", "--format-version", "1"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo metadata");
    assert!(out.status.success(), "cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let mut deps = Vec::new();
    for package in meta["packages"].as_array().expect("packages") {
        let name = package["name"].as_str().expect("package name");
        for dep in package["dependencies"].as_array().expect("dependencies") {
            let kind = dep["kind"].as_str().unwrap_or("normal");
            deps.push((
                name.to_string(),
                dep["name"].as_str().expect("dependency name").to_string(),
                kind.to_string(),
            ));
        }
    }
    deps
}

#[test]
fn every_dependency_points_to_a_lower_layer() {
    let layers: BTreeMap<&str, u32> = LAYERS.iter().copied().collect();
    let deps = workspace_dependencies();
    let mut problems = BTreeSet::new();
    for (package, dep, kind) in &deps {
        let Some(&from) = layers.get(package.as_str()) else {
            problems.insert(format!("workspace crate {package} has no layer: add it to LAYERS in this test"));
            continue;
        };
        if !dep.starts_with("oxnet-") {
            continue;
        }
        let problem = match layers.get(dep.as_str()) {
            Some(&to) if to < from => continue,
            Some(&to) => format!(
                "{package} (layer {from}) has a {kind} dependency on {dep} (layer {to}): dependencies must point to lower layers"
            ),
            None => format!("{package} depends on {dep}, which has no layer"),
        };
        problems.insert(problem);
    }
    assert!(problems.is_empty(), "{}", Vec::from_iter(problems).join("\n"));
}

#[test]
fn core_depends_on_no_crate_of_ours_and_ops_on_core_alone() {
    let deps = workspace_dependencies();
    let ours = |package: &str| -> Vec<String> {
        deps.iter()
            .filter(|(p, d, _)| p == package && d.starts_with("oxnet-"))
            .map(|(_, d, _)| d.clone())
            .collect()
    };
    assert_eq!(ours("oxnet-core"), Vec::<String>::new());
    assert_eq!(ours("oxnet-ops"), vec!["oxnet-core".to_string()]);
}
