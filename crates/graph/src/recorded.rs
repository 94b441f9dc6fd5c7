//! A Symbol from what autograd recorded (MXNet's `autograd.get_symbol`).

use crate::Symbol;
use oxnet_core::autograd::{self, RecordedInput};
use oxnet_core::{NDArray, Result};
use std::collections::BTreeMap;

/// The symbol computing `heads` from the variables they were recorded
/// from: variables are named `var0`, `var1`, ... in the order the record
/// reaches them, arrays that took no part in autograd become variables
/// `const0`, `const1`, ..., and several heads make a grouped symbol.
pub fn recorded_symbol(heads: &[&NDArray]) -> Result<Symbol> {
    let graph = autograd::recorded_graph(heads)?;
    let variables: Vec<Symbol> = (0..graph.num_variables).map(|i| Symbol::var(&format!("var{i}"))).collect();
    let mut constants = 0usize;
    let mut made: Vec<Symbol> = Vec::with_capacity(graph.calls.len());
    let mut resolve = |input: &RecordedInput, made: &[Symbol]| -> Result<Symbol> {
        Ok(match input {
            RecordedInput::Variable(i) => variables[*i].clone(),
            RecordedInput::Constant => {
                constants += 1;
                Symbol::var(&format!("const{}", constants - 1))
            }
            RecordedInput::Output { call, index } => made[*call].get(*index)?,
        })
    };
    for call in &graph.calls {
        let inputs = call.inputs.iter().map(|i| resolve(i, &made)).collect::<Result<Vec<_>>>()?;
        made.push(Symbol::compose_op(&call.op, &inputs, &[], call.attrs.clone(), None, BTreeMap::new())?);
    }
    let heads = graph.heads.iter().map(|h| resolve(h, &made)).collect::<Result<Vec<_>>>()?;
    Ok(if heads.len() == 1 { heads.into_iter().next().expect("one head") } else { Symbol::group(&heads) })
}
