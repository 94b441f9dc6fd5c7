//! The profiler's recording, trace and statistics. The profiler is
//! process-wide, so these tests take one lock and run one at a time.

use super::*;
use crate::{invoke1, registry, NDArray, OpDef};
use std::sync::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

fn register_ops() {
    let _ =
        registry::register(OpDef::new("prof_copy").forward(|_ctx, ins, outs| outs[0].assign_from(&ins[0])));
}

fn json_of(stats: &str) -> serde_json::Value {
    serde_json::from_str(stats).unwrap_or_else(|e| panic!("not JSON ({e}): {stats}"))
}

fn fresh(config: Config) {
    set_state(State::Stop);
    set_paused(false);
    set_config(config).unwrap();
    aggregate(true, Format::Json, SortBy::Total, false);
    record::drop_gathered();
}

#[test]
fn counts_operator_calls_and_only_while_running() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    register_ops();
    fresh(Config::default());
    let x = NDArray::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    invoke1("prof_copy", &[&x], &[]).unwrap(); // not running: not counted
    set_state(State::Run);
    for _ in 0..3 {
        invoke1("prof_copy", &[&x], &[]).unwrap();
    }
    set_paused(true);
    invoke1("prof_copy", &[&x], &[]).unwrap(); // paused: not counted
    set_paused(false);
    set_state(State::Stop);
    let v = json_of(&aggregate(false, Format::Json, SortBy::Total, false));
    let e = &v["Time"]["operator"]["prof_copy"];
    assert_eq!(e["Count"], 3, "{v}");
    let (min, max, avg, total) = (
        e["Min"].as_f64().unwrap(),
        e["Max"].as_f64().unwrap(),
        e["Avg"].as_f64().unwrap(),
        e["Total"].as_f64().unwrap(),
    );
    assert!(min <= avg && avg <= max && (total - 3.0 * avg).abs() < 1e-3, "{e}");
    assert_eq!(v["Unit"]["Time"], "ms");
    // memory: three outputs of 8 bytes were allocated while running
    let mem = &v["Memory"]["Device Storage"]["Memory: cpu/0"];
    assert!(mem["Count"].as_u64().unwrap() >= 3, "{v}");
    // reset empties the statistics
    aggregate(true, Format::Json, SortBy::Total, false);
    let v = json_of(&aggregate(false, Format::Json, SortBy::Total, false));
    assert!(v["Time"].as_object().unwrap().is_empty(), "{v}");
}

#[test]
fn graph_nodes_follow_profile_symbolic() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    register_ops();
    fresh(Config { profile_imperative: false, ..Config::default() });
    set_state(State::Run);
    let x = NDArray::from_vec(vec![1.0f32], &[1]).unwrap();
    invoke1("prof_copy", &[&x], &[]).unwrap(); // imperative: off
    {
        let _g = graph_scope();
        invoke1("prof_copy", &[&x], &[]).unwrap(); // a graph's node: on
    }
    set_state(State::Stop);
    let v = json_of(&aggregate(false, Format::Json, SortBy::Count, false));
    assert_eq!(v["Time"]["operator"]["prof_copy"]["Count"], 1, "{v}");
}

#[test]
fn custom_scopes_name_inner_calls() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    register_ops();
    fresh(Config::default());
    set_state(State::Run);
    let x = NDArray::from_vec(vec![1.0f32], &[1]).unwrap();
    {
        let _c = custom_scope("MyOp", "pure_python", false);
        invoke1("prof_copy", &[&x], &[]).unwrap();
    }
    {
        let _c = custom_scope("MyOp", "pure_python", true);
    }
    set_state(State::Stop);
    let v = json_of(&aggregate(false, Format::Json, SortBy::Total, false));
    let custom = &v["Time"]["Custom Operator"];
    for name in ["MyOp::pure_python", "_backward_MyOp::pure_python", "MyOp::prof_copy"] {
        assert_eq!(custom[name]["Count"], 1, "{name} in {v}");
    }
    assert!(v["Time"].get("operator").is_none_or(|o| o.get("prof_copy").is_none()), "{v}");
}

#[test]
fn sorting_orders_every_domain() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    fresh(Config::default());
    set_state(State::Run);
    for (name, n, dur) in [("a", 1, 5_000u64), ("b", 3, 1_000), ("c", 2, 9_000)] {
        for _ in 0..n {
            record_span("D", name, 100, 100 + dur);
        }
    }
    set_state(State::Stop);
    let order = |by, asc| -> Vec<String> {
        let text = aggregate(false, Format::Json, by, asc);
        // the JSON keeps the sorted order in its text
        let d = text.split("\"D\": {").nth(1).unwrap();
        let mut names: Vec<(usize, String)> =
            ["a", "b", "c"].iter().map(|n| (d.find(&format!("\"{n}\"")).unwrap(), n.to_string())).collect();
        names.sort();
        names.into_iter().map(|(_, n)| n).collect()
    };
    // totals: a 5 µs, b 3 µs, c 18 µs; counts 1, 3, 2; min = max = avg = dur
    assert_eq!(order(SortBy::Total, false), ["c", "a", "b"]);
    assert_eq!(order(SortBy::Total, true), ["b", "a", "c"]);
    assert_eq!(order(SortBy::Count, false), ["b", "c", "a"]);
    assert_eq!(order(SortBy::Min, true), ["b", "a", "c"]);
    assert_eq!(order(SortBy::Avg, false), ["c", "a", "b"]);
    let v = json_of(&aggregate(false, Format::Json, SortBy::Total, false));
    assert_eq!(v["Time"]["D"]["c"]["Total"], 0.018);
    assert_eq!(v["Time"]["D"]["b"]["Avg"], 0.001);
    let table = aggregate(false, Format::Table, SortBy::Total, false);
    assert!(table.contains("Profile Statistics:") && table.contains("D\n=================\n"), "{table}");
    let c = table.lines().find(|l| l.starts_with("c ")).unwrap();
    let cols: Vec<&str> = c.split_whitespace().collect();
    assert_eq!(cols, ["c", "2", "0.0180", "0.0090", "0.0090", "0.0090"]);
}

#[test]
fn trace_file_is_chrome_json() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    register_ops();
    let dir = std::env::temp_dir().join(format!("oxnet-prof-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("trace.json");
    fresh(Config { filename: file.to_string_lossy().into(), ..Config::default() });
    set_state(State::Run);
    let x = NDArray::from_vec(vec![1.0f32], &[1]).unwrap();
    invoke1("prof_copy", &[&x], &[]).unwrap();
    record_counter("D \"quoted\"", "ctr", 7);
    record_marker("D", "mark", MarkerScope::Process);
    dump(false).unwrap();
    let first = std::fs::metadata(&file).unwrap().len();
    invoke1("prof_copy", &[&x], &[]).unwrap();
    dump(false).unwrap(); // continuous: the file keeps the earlier events
    assert!(std::fs::metadata(&file).unwrap().len() > first);
    set_state(State::Stop);
    dump(true).unwrap();
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    let ops: Vec<&serde_json::Value> = events.iter().filter(|e| e["name"] == "prof_copy").collect();
    assert_eq!(ops.len(), 2);
    for e in &ops {
        assert_eq!(e["ph"], "X");
        assert_eq!(e["cat"], "operator");
        assert!(e["dur"].as_f64().unwrap() >= 0.0 && e["ts"].as_f64().unwrap() > 0.0);
        let tid = e["tid"].as_u64().unwrap();
        assert!(events.iter().any(|m| m["name"] == "thread_name" && m["tid"].as_u64() == Some(tid)));
    }
    assert!(events.iter().any(|e| e["ph"] == "C" && e["cat"] == "D \"quoted\"" && e["args"]["ctr"] == 7));
    assert!(events.iter().any(|e| e["ph"] == "i" && e["name"] == "mark" && e["s"] == "p"));
    assert!(events.iter().any(|e| e["ph"] == "C" && e["name"] == "Memory: cpu/0"));
    // a finishing dump dropped the events: the next dump writes none
    dump(true).unwrap();
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(!v["traceEvents"].as_array().unwrap().iter().any(|e| e["name"] == "prof_copy"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn events_from_other_threads_are_gathered() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    fresh(Config::default());
    set_state(State::Run);
    std::thread::spawn(|| record_span("T", "from_thread", 0, 1000)).join().unwrap();
    set_state(State::Stop);
    let v = json_of(&aggregate(false, Format::Json, SortBy::Total, false));
    assert_eq!(v["Time"]["T"]["from_thread"]["Count"], 1, "{v}");
}
