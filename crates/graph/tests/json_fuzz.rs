//! Mutated graph JSON never panics the loader: every input is either a
//! symbol (which then lists, infers and writes without panicking) or an
//! error. Bounded here (`PROPTEST_CASES` raises it);
//! `scripts/fuzz_graph_json.sh` runs it much longer.

use oxnet_graph::json::{from_json, to_json};
use oxnet_graph::{infer, Symbol};
use proptest::prelude::*;
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

fn seeds() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/graph");
    let mut out: Vec<String> = ["mlp", "elemwise", "shapes", "group", "legacy"]
        .iter()
        .filter_map(|n| std::fs::read_to_string(dir.join(format!("{n}-symbol.json"))).ok())
        .collect();
    let x = Symbol::var("x");
    let y = Symbol::op("Dropout", &[&x], &[("p", 0.5.into())], Some("d")).unwrap();
    out.push(
        to_json(&Symbol::group(&[y.clone(), Symbol::op("relu", &[&y], &[], Some("r")).unwrap()])).unwrap(),
    );
    out
}

/// One edit of the text: flip, delete, insert or duplicate bytes, or
/// replace a number or a name with another.
#[derive(Debug, Clone)]
enum Edit {
    Flip(usize, u8),
    Delete(usize, usize),
    Insert(usize, String),
    Truncate(usize),
    Number(usize, i64),
    Name(usize, String),
}

fn edit() -> impl Strategy<Value = Edit> {
    let tokens = prop::sample::select(vec![
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        "\"",
        "null",
        "-1",
        "99999999999",
        "\"op\"",
        "\"inputs\"",
        "[[0, 0, 0]]",
        "\"nodes\"",
        "\"heads\": []",
        "\"attrs\": {}",
        "\"num_hidden\": \"-3\"",
        "1e309",
        "\"\\u0000\"",
    ]);
    let names = prop::sample::select(vec![
        "FullyConnected",
        "Concat",
        "null",
        "Custom",
        "reshape",
        "softmax",
        "",
        "_backward_relu",
        "Dropout",
    ]);
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Flip(i, b)),
        (any::<usize>(), 1usize..40).prop_map(|(i, n)| Edit::Delete(i, n)),
        (any::<usize>(), tokens).prop_map(|(i, t)| Edit::Insert(i, t.to_string())),
        any::<usize>().prop_map(Edit::Truncate),
        (any::<usize>(), -3i64..40).prop_map(|(i, v)| Edit::Number(i, v)),
        (any::<usize>(), names).prop_map(|(i, n)| Edit::Name(i, n.to_string())),
    ]
}

fn apply(text: &str, e: &Edit) -> String {
    let mut b = text.as_bytes().to_vec();
    let at = |i: usize, len: usize| if len == 0 { 0 } else { i % len };
    match e {
        Edit::Flip(i, v) => {
            let i = at(*i, b.len());
            if !b.is_empty() {
                b[i] = *v;
            }
        }
        Edit::Delete(i, n) => {
            let i = at(*i, b.len());
            let end = (i + n).min(b.len());
            b.drain(i..end);
        }
        Edit::Insert(i, t) => {
            let i = at(*i, b.len() + 1);
            b.splice(i..i, t.bytes());
        }
        Edit::Truncate(i) => b.truncate(at(*i, b.len() + 1)),
        Edit::Number(i, v) => {
            let digits: Vec<usize> = (0..b.len()).filter(|&k| b[k].is_ascii_digit()).collect();
            if !digits.is_empty() {
                let k = digits[at(*i, digits.len())];
                b.splice(k..k + 1, v.to_string().bytes());
            }
        }
        Edit::Name(i, n) => {
            let s = String::from_utf8_lossy(&b).into_owned();
            let quotes: Vec<usize> = s.match_indices("\"op\": \"").map(|(k, _)| k + 7).collect();
            if !quotes.is_empty() {
                let k = quotes[at(*i, quotes.len())];
                let end = s[k..].find('"').map(|e| k + e).unwrap_or(k);
                return format!("{}{}{}", &s[..k], n, &s[end..]);
            }
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

/// Everything a user may do with a loaded symbol, none of which may panic.
fn exercise(text: &str) {
    if let Ok(sym) = from_json(text) {
        let _ = sym.list_arguments();
        let _ = sym.list_outputs();
        let _ = sym.list_auxiliary_states();
        let _ = sym.internals();
        let _ = sym.attr_dict();
        if let Ok(g) = sym.indexed() {
            let given: HashMap<String, Vec<usize>> =
                sym.list_arguments().unwrap_or_default().into_iter().map(|a| (a, vec![2, 3])).collect();
            let _ = infer::infer_shapes(&g, &given);
            let _ = infer::infer_dtypes(&g, &HashMap::new());
        }
        let _ = to_json(&sym);
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(512),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn mutated_json_never_panics(seed in 0usize..6, edits in prop::collection::vec(edit(), 1..4)) {
        let seeds = seeds();
        let mut text = seeds[seed % seeds.len()].clone();
        for e in &edits {
            text = apply(&text, e);
        }
        let outcome = catch_unwind(AssertUnwindSafe(|| exercise(&text)));
        prop_assert!(outcome.is_ok(), "panicked on:\n{}", text);
    }
}
