//! Gradients of the interleaved attention products, written as operator
//! calls (`reshape`, `slice_axis`, `transpose`, `concat`, `batch_dot`,
//! `_mul_scalar`), so that they are differentiable again.
//!
//! Each rule takes the heads it needs out of the interleaved projections as
//! batch-major `(batch·heads, len, head_dim)` arrays, multiplies with
//! `batch_dot`, and lays the products back out in the projection's
//! interleaved layout, with zeros for the chunks the output does not read.

use super::dims::{heads, Dims, Kind};
use crate::util::call;
use oxnet_core::{AttrValue, GradCtx, NDArray, Result};

fn reshape(x: &NDArray, shape: &[usize]) -> Result<NDArray> {
    let spec = shape.iter().map(|&e| e as i64).collect();
    call("reshape", &[x], &[("shape", AttrValue::Ints(spec))])
}

/// Swaps the first two axes of a 3-d array.
fn swap01(x: &NDArray) -> Result<NDArray> {
    call("transpose", &[x], &[("axes", AttrValue::Ints(vec![1, 0, 2]))])
}

fn batch_dot(a: &NDArray, b: &NDArray, ta: bool, tb: bool) -> Result<NDArray> {
    call("batch_dot", &[a, b], &[("transpose_a", ta.into()), ("transpose_b", tb.into())])
}

fn scaled(x: &NDArray, s: f64) -> Result<NDArray> {
    if s == 1.0 {
        return Ok(x.clone());
    }
    call("_mul_scalar", &[x], &[("scalar", AttrValue::Float(s))])
}

/// Chunk `part` of every head of the projection `x`
/// `(len, batch, heads·parts·head_dim)`, as `(batch·heads, len, head_dim)`.
fn head_chunk(x: &NDArray, d: &Dims, len: usize, parts: usize, part: usize) -> Result<NDArray> {
    let hd = d.head_dim;
    let mut y = reshape(x, &[len, d.attention_batches(), parts * hd])?;
    if parts > 1 {
        let (begin, end) = ((part * hd) as i64, ((part + 1) * hd) as i64);
        y = call(
            "slice_axis",
            &[&y],
            &[("axis", AttrValue::Int(2)), ("begin", AttrValue::Int(begin)), ("end", AttrValue::Int(end))],
        )?;
    }
    swap01(&y)
}

/// The inverse of [`head_chunk`] over all chunks: lays `chunks` (each
/// `(batch·heads, len, head_dim)`, `None` for zeros) out as one projection
/// `(len, batch, heads·chunks.len()·head_dim)`.
fn interleave(chunks: &[Option<NDArray>], d: &Dims, len: usize, like: &NDArray) -> Result<NDArray> {
    let bh = d.attention_batches();
    let seq_major: Vec<NDArray> = chunks
        .iter()
        .map(|c| match c {
            Some(c) => swap01(c),
            None => NDArray::zeros(&[len, bh, d.head_dim], like.dtype(), like.device()),
        })
        .collect::<Result<_>>()?;
    let joined = if seq_major.len() == 1 {
        seq_major[0].clone()
    } else {
        let refs: Vec<&NDArray> = seq_major.iter().collect();
        call("concat", &refs, &[("num_args", AttrValue::Int(refs.len() as i64)), ("dim", AttrValue::Int(2))])?
    };
    reshape(&joined, &[len, d.batch, chunks.len() * d.proj()])
}

/// The gradient rule of operator `kind`: one gradient per input.
pub(super) fn rule(kind: Kind, g: &GradCtx) -> Result<Vec<Option<NDArray>>> {
    let shapes: Vec<&[usize]> = g.inputs.iter().map(|x| x.shape()).collect();
    let d = kind.dims(heads(g.attrs)?, &shapes)?;
    let (og, need, ins) = (&g.out_grads[0], g.needs_grad, g.inputs);
    let (q_len, kv_len) = (d.q_len, d.kv_len);
    Ok(match kind {
        Kind::SelfAttQk => {
            if !need[0] {
                return Ok(vec![None]);
            }
            let gs = scaled(og, d.scale())?;
            let q = head_chunk(&ins[0], &d, q_len, 3, 0)?;
            let k = head_chunk(&ins[0], &d, q_len, 3, 1)?;
            let dq = batch_dot(&gs, &k, false, false)?;
            let dk = batch_dot(&gs, &q, true, false)?;
            vec![Some(interleave(&[Some(dq), Some(dk), None], &d, q_len, og)?)]
        }
        Kind::SelfAttValAtt => {
            let go = head_chunk(og, &d, q_len, 1, 0)?;
            let d_qkv = if need[0] {
                let dv = batch_dot(&ins[1], &go, true, false)?;
                Some(interleave(&[None, None, Some(dv)], &d, q_len, og)?)
            } else {
                None
            };
            let d_att = if need[1] {
                Some(batch_dot(&go, &head_chunk(&ins[0], &d, q_len, 3, 2)?, false, true)?)
            } else {
                None
            };
            vec![d_qkv, d_att]
        }
        Kind::EncDecQk => {
            let gs = scaled(og, d.scale())?;
            let d_q = if need[0] {
                let k = head_chunk(&ins[1], &d, kv_len, 2, 0)?;
                Some(interleave(&[Some(batch_dot(&gs, &k, false, false)?)], &d, q_len, og)?)
            } else {
                None
            };
            let d_kv = if need[1] {
                let q = head_chunk(&ins[0], &d, q_len, 1, 0)?;
                Some(interleave(&[Some(batch_dot(&gs, &q, true, false)?), None], &d, kv_len, og)?)
            } else {
                None
            };
            vec![d_q, d_kv]
        }
        Kind::EncDecValAtt => {
            let go = head_chunk(og, &d, q_len, 1, 0)?;
            let d_kv = if need[0] {
                let dv = batch_dot(&ins[1], &go, true, false)?;
                Some(interleave(&[None, Some(dv)], &d, kv_len, og)?)
            } else {
                None
            };
            let d_att = if need[1] {
                Some(batch_dot(&go, &head_chunk(&ins[0], &d, kv_len, 2, 1)?, false, true)?)
            } else {
                None
            };
            vec![d_kv, d_att]
        }
    })
}
