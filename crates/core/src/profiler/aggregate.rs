//! Aggregate statistics: per domain and name, how many events and their
//! total, minimum, maximum and mean; rendered as MXNet's table or JSON.

use super::record::{Kind, Record};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

/// The domain of memory counters (MXNet's name).
pub(crate) const MEMORY_DOMAIN: &str = "Device Storage";

/// How [`super::aggregate`] renders the statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// MXNet's fixed-width table.
    Table,
    /// MXNet's JSON: `{"Time": {domain: {name: {...}}}, "Memory": {...}, "Unit": {...}}`.
    Json,
}

impl Format {
    /// Parses `table` or `json`.
    pub fn parse(s: &str) -> Option<Format> {
        match s {
            "table" => Some(Format::Table),
            "json" => Some(Format::Json),
            _ => None,
        }
    }
}

/// The statistic the entries of each domain are sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortBy {
    /// Total time.
    Total,
    /// Mean time (mean value for counters).
    Avg,
    /// Shortest time (smallest value).
    Min,
    /// Longest time (largest value).
    Max,
    /// Number of events.
    Count,
}

impl SortBy {
    /// Parses `total`, `avg`, `min`, `max` or `count`.
    pub fn parse(s: &str) -> Option<SortBy> {
        match s {
            "total" => Some(SortBy::Total),
            "avg" => Some(SortBy::Avg),
            "min" => Some(SortBy::Min),
            "max" => Some(SortBy::Max),
            "count" => Some(SortBy::Count),
            _ => None,
        }
    }
}

/// One name's statistics: durations in ns, or counter values.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Stat {
    count: u64,
    total: f64,
    min: f64,
    max: f64,
    last: f64,
    counter: bool,
}

impl Stat {
    fn add(&mut self, v: f64, counter: bool) {
        if self.count == 0 {
            self.min = v;
            self.max = v;
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
        self.count += 1;
        self.total += v;
        self.last = v;
        self.counter = counter;
    }

    fn avg(&self) -> f64 {
        self.total / self.count.max(1) as f64
    }

    /// The value reported as "Total": summed durations, or a counter's last value.
    fn reported_total(&self) -> f64 {
        if self.counter {
            self.last
        } else {
            self.total
        }
    }

    fn key(&self, by: SortBy) -> f64 {
        match by {
            SortBy::Total => self.reported_total(),
            SortBy::Avg => self.avg(),
            SortBy::Min => self.min,
            SortBy::Max => self.max,
            SortBy::Count => self.count as f64,
        }
    }
}

/// Statistics per domain, per name.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    domains: BTreeMap<String, HashMap<String, Stat>>,
}

impl Stats {
    /// Counts one event (markers are not summed).
    pub fn add(&mut self, r: &Record) {
        let (value, counter) = match r.kind {
            Kind::Span { dur_ns } => (dur_ns as f64, false),
            Kind::Counter { value } => (value as f64, true),
            Kind::Marker(_) => return,
        };
        self.domains
            .entry(r.domain.to_string())
            .or_default()
            .entry(r.name.clone())
            .or_default()
            .add(value, counter);
    }

    /// The entries of `domain` sorted by `by` (largest first unless `ascending`; ties by name).
    fn sorted(entries: &HashMap<String, Stat>, by: SortBy, ascending: bool) -> Vec<(&String, &Stat)> {
        let mut v: Vec<(&String, &Stat)> = entries.iter().collect();
        v.sort_by(|a, b| {
            let o = a.1.key(by).total_cmp(&b.1.key(by)).then_with(|| b.0.cmp(a.0));
            if ascending {
                o
            } else {
                o.reverse()
            }
        });
        v
    }
}

/// Durations are shown in ms, memory in kB (1000 bytes, as MXNet), other
/// counters as they are.
fn shown(domain: &str, stat: &Stat, v: f64) -> f64 {
    if domain == MEMORY_DOMAIN {
        v / 1000.0
    } else if stat.counter {
        v
    } else {
        v / 1e6
    }
}

/// Renders the statistics.
pub(crate) fn render(stats: &Stats, format: Format, by: SortBy, ascending: bool) -> String {
    match format {
        Format::Table => table(stats, by, ascending),
        Format::Json => json(stats, by, ascending),
    }
}

fn table(stats: &Stats, by: SortBy, ascending: bool) -> String {
    let mut s =
        String::from("\nProfile Statistics:\n\tNote the difference in units for different entries.\n");
    for (domain, entries) in &stats.domains {
        let memory = domain == MEMORY_DOMAIN;
        let _ = writeln!(s, "{domain}\n=================");
        if memory {
            let _ = writeln!(
                s,
                "{:<25}{:>16} {:>16} {:>16} {:>16}",
                "Name", "Total Count", "Min Use  (kB)", "Max Use  (kB)", "Avg Use  (kB)"
            );
            let _ = writeln!(
                s,
                "{:<25}{:>16} {:>16} {:>16} {:>16}",
                "----", "-----------", "-------------", "-------------", "-------------"
            );
        } else {
            let _ = writeln!(
                s,
                "{:<25}{:>16} {:>16} {:>16} {:>16} {:>16}",
                "Name", "Total Count", "Time (ms)", "Min Time (ms)", "Max Time (ms)", "Avg Time (ms)"
            );
            let _ = writeln!(
                s,
                "{:<25}{:>16} {:>16} {:>16} {:>16} {:>16}",
                "----", "-----------", "---------", "-------------", "-------------", "-------------"
            );
        }
        for (name, st) in Stats::sorted(entries, by, ascending) {
            let f = |v: f64| shown(domain, st, v);
            if memory {
                let _ = writeln!(
                    s,
                    "{:<25}{:>16} {:>16.4} {:>16.4} {:>16.4}",
                    name,
                    st.count,
                    f(st.min),
                    f(st.max),
                    f(st.avg())
                );
            } else {
                let _ = writeln!(
                    s,
                    "{:<25}{:>16} {:>16.4} {:>16.4} {:>16.4} {:>16.4}",
                    name,
                    st.count,
                    f(st.reported_total()),
                    f(st.min),
                    f(st.max),
                    f(st.avg())
                );
            }
        }
        s.push('\n');
    }
    s
}

/// A number for JSON, rounded to 0.1 µs (or 0.1 byte), finite.
fn number(v: f64) -> String {
    let r = (v * 1e4).round() / 1e4;
    if r.is_finite() {
        format!("{r}")
    } else {
        "0".into()
    }
}

fn json(stats: &Stats, by: SortBy, ascending: bool) -> String {
    let mut time = Vec::new();
    let mut memory = Vec::new();
    for (domain, entries) in &stats.domains {
        let is_memory = domain == MEMORY_DOMAIN;
        let items: Vec<String> = Stats::sorted(entries, by, ascending)
            .into_iter()
            .map(|(name, st)| {
                let f = |v: f64| number(shown(domain, st, v));
                let total = if is_memory {
                    String::new()
                } else {
                    format!("\"Total\": {}, ", f(st.reported_total()))
                };
                format!(
                    "            {}: {{\"Count\": {}, {total}\"Min\": {}, \"Max\": {}, \"Avg\": {}}}",
                    super::chrome::quote(name),
                    st.count,
                    f(st.min),
                    f(st.max),
                    f(st.avg())
                )
            })
            .collect();
        let block =
            format!("        {}: {{\n{}\n        }}", super::chrome::quote(domain), items.join(",\n"));
        if is_memory {
            memory.push(block);
        } else {
            time.push(block);
        }
    }
    format!(
        "{{\n    \"Time\": {{\n{}\n    }},\n    \"Memory\": {{\n{}\n    }},\n    \"Unit\": {{\"Time\": \"ms\", \"Memory\": \"kB\"}}\n}}\n",
        time.join(",\n"),
        memory.join(",\n")
    )
}
