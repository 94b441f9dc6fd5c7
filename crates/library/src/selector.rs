//! Growing subgraphs with a library's selector over a graph read from NNVM
//! JSON, the way MXNet's partitioning pass drives its subgraph selectors.
//!
//! For each node not yet in a subgraph, in graph order: `select` decides
//! whether it seeds a subgraph; the subgraph grows breadth-first into input
//! nodes (`select_input`) and consumers (`select_output`) that are free;
//! when the grown set would feed itself through an outside node (so that it
//! could not become one node), the member with the largest id that reads
//! from such a path is excluded and the growth retried (the seed alone if
//! that member is the seed); `filter` picks the nodes kept; each connected
//! group of kept nodes becomes a subgraph with the next id; `reset` follows.
//! Variables are never offered to the selector.

use crate::graph_json::GraphView;
use oxnet_abi as abi;
use std::collections::{HashSet, VecDeque};

/// Destroys a selector when the partitioning call ends, however it ends.
pub(crate) struct SelectorGuard(pub abi::Selector);

impl Drop for SelectorGuard {
    fn drop(&mut self) {
        if let Some(d) = self.0.destroy {
            // SAFETY: the library's selector, destroyed once.
            unsafe { d(self.0.selector) };
        }
    }
}

type Answer = Result<bool, String>;

fn flag(what: &str, f: impl FnOnce(*mut i32) -> i32) -> Answer {
    let mut selected = 0i32;
    let status = f(&mut selected);
    if status == abi::OK {
        Ok(selected != 0)
    } else {
        Err(format!("selector {what} failed (status {status})"))
    }
}

/// The selector's three questions, checked to exist.
struct Ask<'a> {
    s: &'a abi::Selector,
    select_input: unsafe extern "C" fn(*mut std::ffi::c_void, i32, i32, *mut i32) -> i32,
    select_output: unsafe extern "C" fn(*mut std::ffi::c_void, i32, i32, *mut i32) -> i32,
}

impl Ask<'_> {
    fn input(&self, cur: usize, inp: usize) -> Answer {
        // SAFETY: the library's selector and callback; ids are node ids of the graph.
        flag("select_input", |out| unsafe {
            (self.select_input)(self.s.selector, cur as i32, inp as i32, out)
        })
    }

    fn output(&self, cur: usize, o: usize) -> Answer {
        // SAFETY: as `input`.
        flag("select_output", |out| unsafe {
            (self.select_output)(self.s.selector, cur as i32, o as i32, out)
        })
    }
}

/// The nodes grown from `seed` (sorted), skipping taken, variable and excluded nodes.
fn label(
    g: &GraphView,
    consumers: &[Vec<usize>],
    ids: &[i32],
    ask: &Ask,
    seed: usize,
    excluded: &HashSet<usize>,
) -> Result<Vec<usize>, String> {
    let mut members = vec![seed];
    let mut seen = HashSet::from([seed]);
    let mut queue = VecDeque::from([seed]);
    let free = |n: usize, seen: &HashSet<usize>| {
        ids[n] == -1 && !g.nodes[n].is_variable() && !seen.contains(&n) && !excluded.contains(&n)
    };
    while let Some(cur) = queue.pop_front() {
        for &inp in &g.nodes[cur].inputs {
            if free(inp, &seen) && ask.input(cur, inp)? {
                seen.insert(inp);
                members.push(inp);
                queue.push_back(inp);
            }
        }
        for &o in &consumers[cur] {
            if free(o, &seen) && ask.output(cur, o)? {
                seen.insert(o);
                members.push(o);
                queue.push_back(o);
            }
        }
    }
    members.sort_unstable();
    Ok(members)
}

/// Nodes outside `inside` reachable from it through outside nodes only,
/// following `next` (consumers: downstream; inputs: upstream).
fn outside_reach(inside: &[bool], members: &[usize], next: impl Fn(usize) -> Vec<usize>) -> Vec<bool> {
    let mut reached = vec![false; inside.len()];
    let mut stack: Vec<usize> = members.iter().flat_map(|&m| next(m)).filter(|&n| !inside[n]).collect();
    while let Some(n) = stack.pop() {
        if !reached[n] {
            reached[n] = true;
            stack.extend(next(n).into_iter().filter(|&k| !inside[k] && !reached[k]));
        }
    }
    reached
}

/// When `members` feed themselves through outside nodes, the member with the
/// largest id that reads from such a path (excluding it breaks that path).
fn cycle_breaker(g: &GraphView, consumers: &[Vec<usize>], members: &[usize]) -> Option<usize> {
    let mut inside = vec![false; g.nodes.len()];
    for &m in members {
        inside[m] = true;
    }
    let below = outside_reach(&inside, members, |n| consumers[n].clone());
    let above = outside_reach(&inside, members, |n| g.nodes[n].inputs.clone());
    let on_cycle = |n: usize| below[n] && above[n];
    members.iter().copied().filter(|&m| g.nodes[m].inputs.iter().any(|&i| !inside[i] && on_cycle(i))).max()
}

/// The connected groups (through edges between them) of `kept`, each sorted,
/// ordered by their smallest node.
fn components(g: &GraphView, consumers: &[Vec<usize>], kept: &[usize]) -> Vec<Vec<usize>> {
    let mut left: HashSet<usize> = kept.iter().copied().collect();
    let mut out = Vec::new();
    for &start in kept {
        if !left.remove(&start) {
            continue;
        }
        let mut group = vec![start];
        let mut stack = vec![start];
        while let Some(n) = stack.pop() {
            for &k in g.nodes[n].inputs.iter().chain(&consumers[n]) {
                if left.remove(&k) {
                    group.push(k);
                    stack.push(k);
                }
            }
        }
        group.sort_unstable();
        out.push(group);
    }
    out
}

/// Calls the selector's `filter` on `members`; checks that it keeps a subset.
fn filter(s: &abi::Selector, members: Vec<usize>) -> Result<Vec<usize>, String> {
    let Some(f) = s.filter else { return Ok(members) };
    let cands: Vec<i32> = members.iter().map(|&m| m as i32).collect();
    let mut keep = vec![-1i32; cands.len()];
    let mut num_keep = 0i32;
    // SAFETY: the library's callback; `keep` has room for every candidate.
    let status =
        unsafe { f(s.selector, cands.as_ptr(), cands.len() as i32, keep.as_mut_ptr(), &mut num_keep) };
    if status != abi::OK {
        return Err(format!("selector filter failed (status {status})"));
    }
    if !(0..=cands.len() as i32).contains(&num_keep) {
        return Err(format!("selector filter kept {num_keep} of {} candidates", cands.len()));
    }
    let mut kept: Vec<usize> = Vec::new();
    for &k in &keep[..num_keep as usize] {
        if !cands.contains(&k) || kept.contains(&(k as usize)) {
            return Err(format!(
                "selector filter kept node {k}, which is not a candidate or is kept twice (candidates {cands:?})"
            ));
        }
        kept.push(k as usize);
    }
    kept.sort_unstable();
    Ok(kept)
}

/// Grows subgraphs with the library's selector: per node, -1 or its subgraph id.
pub(crate) fn grow(g: &GraphView, s: &abi::Selector) -> Result<Vec<i32>, String> {
    let missing = |what: &str| format!("create_selector gave a selector without `{what}`");
    let select = s.select.ok_or_else(|| missing("select"))?;
    let ask = Ask {
        s,
        select_input: s.select_input.ok_or_else(|| missing("select_input"))?,
        select_output: s.select_output.ok_or_else(|| missing("select_output"))?,
    };
    let consumers = g.consumers();
    let mut ids = vec![-1i32; g.nodes.len()];
    let mut next = 0i32;
    for seed in 0..g.nodes.len() {
        if ids[seed] != -1 || g.nodes[seed].is_variable() {
            continue;
        }
        // SAFETY: the library's selector and callback; `seed` is a node id.
        if !flag("select", |out| unsafe { select(s.selector, seed as i32, out) })? {
            continue;
        }
        let mut excluded = HashSet::new();
        let members = loop {
            let members = label(g, &consumers, &ids, &ask, seed, &excluded)?;
            match cycle_breaker(g, &consumers, &members) {
                None => break members,
                Some(m) if m == seed => break vec![seed],
                Some(m) => {
                    excluded.insert(m);
                }
            }
        };
        let kept = filter(s, members)?;
        if let Some(reset) = s.reset {
            // SAFETY: the library's selector.
            unsafe { reset(s.selector) };
        }
        for group in components(g, &consumers, &kept) {
            for k in group {
                ids[k] = next;
            }
            next += 1;
        }
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph_json::NodeView;

    fn graph(nodes: &[(&str, &[usize])]) -> GraphView {
        GraphView {
            nodes: nodes
                .iter()
                .map(|(op, ins)| NodeView { op: op.to_string(), inputs: ins.to_vec() })
                .collect(),
        }
    }

    #[test]
    fn finds_the_member_that_closes_a_cycle() {
        // 0 x; 1 a(x); 2 t(a); 3 c(a, t): {a, c} feeds itself through t
        let g = graph(&[("null", &[]), ("r", &[0]), ("t", &[1]), ("r", &[1, 2])]);
        let c = g.consumers();
        assert_eq!(cycle_breaker(&g, &c, &[1, 3]), Some(3));
        assert_eq!(cycle_breaker(&g, &c, &[1, 2, 3]), None);
        assert_eq!(cycle_breaker(&g, &c, &[1]), None);
        // a longer way round: 1 -> 2 -> 3 -> 4 with 1 and 4 inside
        let g = graph(&[("null", &[]), ("r", &[0]), ("t", &[1]), ("t", &[2]), ("r", &[3, 1])]);
        assert_eq!(cycle_breaker(&g, &g.consumers(), &[1, 4]), Some(4));
    }

    #[test]
    fn splits_kept_nodes_into_connected_groups() {
        // 1 -> 2 -> 3 and 1 -> 4
        let g = graph(&[("null", &[]), ("r", &[0]), ("r", &[1]), ("r", &[2]), ("r", &[1])]);
        let c = g.consumers();
        assert_eq!(components(&g, &c, &[1, 3, 4]), vec![vec![1, 4], vec![3]]);
        assert_eq!(components(&g, &c, &[1, 2, 3, 4]), vec![vec![1, 2, 3, 4]]);
        assert_eq!(components(&g, &c, &[]), Vec::<Vec<usize>>::new());
    }
}
