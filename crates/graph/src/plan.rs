//! Memory planning: which operator outputs can share a buffer.
//!
//! Walking the steps in execution order, each output takes a free block
//! (the smallest one big enough, else the largest free one grown to fit,
//! else a new one), and each entry's block is freed after the last step
//! that reads it. An element-wise operator's output takes its input's block
//! outright when that step is the input's last reader (in place). Entries that must outlive the run (the outputs users
//! see, and forward values the backward steps read) are simply read late
//! or kept. [`MemoryPlan::summary`] compares the planned bytes with one
//! buffer per entry.

use crate::indexed::IndexedGraph;
use std::collections::HashSet;

/// Where each operator output lives.
#[derive(Debug, Clone)]
pub struct MemoryPlan {
    /// For each entry of the graph: its block, for operator outputs.
    pub block_of: Vec<Option<usize>>,
    /// The size of each block in bytes.
    pub block_bytes: Vec<usize>,
    /// What one buffer per operator output would take.
    pub naive_bytes: usize,
    /// For each entry: true when it is written over its input's buffer.
    pub in_place: Vec<bool>,
}

impl MemoryPlan {
    /// Bytes of all blocks.
    pub fn planned_bytes(&self) -> usize {
        self.block_bytes.iter().sum()
    }

    /// One line: planned bytes against one buffer per entry.
    pub fn summary(&self) -> String {
        let planned = self.planned_bytes();
        format!(
            "memory plan: {} blocks, {planned} bytes planned against {} with one buffer per entry ({:.1}%)",
            self.block_bytes.len(),
            self.naive_bytes,
            if self.naive_bytes == 0 { 100.0 } else { 100.0 * planned as f64 / self.naive_bytes as f64 }
        )
    }
}

/// Plans the outputs of the operator nodes `steps` (in execution order) of
/// `g`, whose entries take `entry_bytes`; entries in `keep` are never freed.
/// `inplace[s]` lists `(input entry, output entry)` pairs step `s` may write
/// in place (same size and dtype, as the operator declares): such an output
/// takes its input's block when this step is the input's last reader.
/// Entries in `external` are written into arrays the caller owns (bound
/// gradient arrays): they take no block.
pub fn plan_memory(
    g: &IndexedGraph,
    steps: &[usize],
    entry_bytes: &[usize],
    keep: &HashSet<usize>,
    inplace: &[Vec<(usize, usize)>],
    external: &HashSet<usize>,
) -> MemoryPlan {
    let mut last_use: Vec<Option<usize>> = vec![None; g.num_entries()];
    for (s, &n) in steps.iter().enumerate() {
        for &(m, k) in &g.inputs[n] {
            last_use[g.entry(m, k)] = Some(s);
        }
    }
    let mut block_of = vec![None; g.num_entries()];
    let mut block_bytes: Vec<usize> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut naive = 0;
    let mut in_place = vec![false; g.num_entries()];
    for (s, &n) in steps.iter().enumerate() {
        let outputs: Vec<usize> = (0..g.num_outputs(n)).map(|k| g.entry(n, k)).collect();
        let mut handed_over: HashSet<usize> = HashSet::new();
        for &e in &outputs {
            let need = entry_bytes[e];
            naive += need;
            if external.contains(&e) {
                continue;
            }
            let donor = inplace.get(s).into_iter().flatten().find(|&&(i, o)| {
                o == e
                    && last_use[i] == Some(s)
                    && !keep.contains(&i)
                    && block_of[i].is_some()
                    && !handed_over.contains(&i)
                    && entry_bytes[i] == need
            });
            if let Some(&(i, _)) = donor {
                block_of[e] = block_of[i];
                handed_over.insert(i);
                in_place[e] = true;
                continue;
            }
            let fit = free
                .iter()
                .enumerate()
                .filter(|(_, &b)| block_bytes[b] >= need)
                .min_by_key(|(_, &b)| block_bytes[b])
                .map(|(i, _)| i);
            let block = match fit {
                Some(i) => free.swap_remove(i),
                None => match free.iter().enumerate().max_by_key(|(_, &b)| block_bytes[b]).map(|(i, _)| i) {
                    Some(i) => {
                        let b = free.swap_remove(i);
                        block_bytes[b] = need;
                        b
                    }
                    None => {
                        block_bytes.push(need);
                        block_bytes.len() - 1
                    }
                },
            };
            block_of[e] = Some(block);
        }
        // free what this step read for the last time, and outputs nobody reads
        let mut release: Vec<usize> =
            g.inputs[n].iter().map(|&(m, k)| g.entry(m, k)).filter(|e| last_use[*e] == Some(s)).collect();
        release.extend(outputs.iter().filter(|e| last_use[**e].is_none()));
        release.sort_unstable();
        release.dedup();
        for e in release {
            if keep.contains(&e) || handed_over.contains(&e) {
                continue;
            }
            if let Some(b) = block_of[e] {
                free.push(b);
            }
        }
    }
    MemoryPlan { block_of, block_bytes, naive_bytes: naive, in_place }
}
