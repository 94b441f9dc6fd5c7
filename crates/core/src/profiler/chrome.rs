//! The Chrome trace-event format (chrome://tracing, Perfetto): a JSON
//! object whose `traceEvents` hold one complete (`X`) event per span, a
//! counter (`C`) event per counter value and an instant (`i`) event per
//! marker, on the thread that recorded them, with times in µs.

use super::record::{Kind, Record};
use std::fmt::Write;

/// The process id every event carries (one process; threads tell apart).
const PID: u32 = 0;

/// `s` as a JSON string literal.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Nanoseconds as the trace's µs, to the ns.
fn micros(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

fn event(r: &Record) -> String {
    let head = format!(
        "{{\"name\": {}, \"cat\": {}, \"pid\": {PID}, \"tid\": {}, \"ts\": {}",
        quote(&r.name),
        quote(&r.domain),
        r.thread,
        micros(r.start_ns)
    );
    let detail =
        r.detail.as_ref().map(|d| format!(", \"args\": {{\"node\": {}}}", quote(d))).unwrap_or_default();
    match r.kind {
        Kind::Span { dur_ns } => format!("{head}, \"ph\": \"X\", \"dur\": {}{detail}}}", micros(dur_ns)),
        Kind::Counter { value } => {
            format!("{head}, \"ph\": \"C\", \"args\": {{{}: {value}}}}}", quote(&r.name))
        }
        Kind::Marker(scope) => format!("{head}, \"ph\": \"i\", \"s\": \"{}\"}}", scope.letter()),
    }
}

/// The trace file's text for `events`, with the threads' names.
pub(crate) fn trace_json(events: &[Record], threads: &[(u32, String)]) -> String {
    let mut lines = vec![format!(
        "{{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": {PID}, \"args\": {{\"name\": \"oxnet\"}}}}"
    )];
    for (id, name) in threads {
        lines.push(format!(
            "{{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": {PID}, \"tid\": {id}, \"args\": {{\"name\": {}}}}}",
            quote(name)
        ));
    }
    lines.extend(events.iter().map(event));
    format!("{{\n\"traceEvents\": [\n{}\n],\n\"displayTimeUnit\": \"ms\"\n}}\n", lines.join(",\n"))
}
