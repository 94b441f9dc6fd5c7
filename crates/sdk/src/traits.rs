//! The traits a plugin implements.

use crate::{Attrs, DType, Resource, Tensor, TensorMut};

/// The result of a plugin callback: the error is the message oxnet reports.
pub type OpResult<T> = Result<T, String>;

/// How a kernel stores into an output (one request per output).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum Req {
    /// Skip the output.
    Null = crate::abi::REQ_NULL,
    /// Overwrite it.
    Write = crate::abi::REQ_WRITE,
    /// Overwrite it; it may alias an input.
    Inplace = crate::abi::REQ_INPLACE,
    /// Add to what it holds.
    Add = crate::abi::REQ_ADD,
}

impl Req {
    /// The request of an ABI code (unknown codes read as `Write`).
    pub fn from_code(code: i32) -> Req {
        match code {
            crate::abi::REQ_NULL => Req::Null,
            crate::abi::REQ_INPLACE => Req::Inplace,
            crate::abi::REQ_ADD => Req::Add,
            _ => Req::Write,
        }
    }

    /// Views the host's request codes as requests (an unknown code is an error).
    ///
    /// # Safety
    /// `p` points to `n` codes (or `n <= 0`).
    pub(crate) unsafe fn slice<'a>(p: *const i32, n: i32) -> OpResult<&'a [Req]> {
        if n <= 0 || p.is_null() {
            return Ok(&[]);
        }
        let codes = std::slice::from_raw_parts(p, n as usize);
        if let Some(bad) = codes.iter().find(|c| !(crate::abi::REQ_NULL..=crate::abi::REQ_ADD).contains(*c)) {
            return Err(format!("unknown output request code {bad}"));
        }
        // SAFETY: every code is a valid discriminant of this repr(i32) enum.
        Ok(std::slice::from_raw_parts(p as *const Req, n as usize))
    }

    /// Stores `v` into `dst` as requested.
    #[inline]
    pub fn store<T: Copy + std::ops::Add<Output = T>>(self, dst: &mut T, v: T) {
        match self {
            Req::Null => {}
            Req::Write | Req::Inplace => *dst = v,
            Req::Add => *dst = *dst + v,
        }
    }
}

/// What every operator declares: its arity, dtype and shape inference, and
/// the inputs it mutates.
pub trait Signature: Send + Sync + 'static {
    /// Number of (inputs, outputs) for these attributes.
    fn parse_attrs(&self, attrs: &Attrs) -> OpResult<(usize, usize)>;

    /// Fills output dtypes; may fill unknown input dtypes. Default: every
    /// input and output takes the first known input dtype.
    fn infer_type(
        &self,
        attrs: &Attrs,
        ins: &mut [Option<DType>],
        outs: &mut [Option<DType>],
    ) -> OpResult<()> {
        let _ = attrs;
        let d = ins.iter().flatten().next().copied().ok_or("no input dtype is known")?;
        for s in ins.iter_mut().chain(outs.iter_mut()) {
            match s {
                Some(have) if *have != d => return Err(format!("dtypes {d:?} and {have:?} must be equal")),
                _ => *s = Some(d),
            }
        }
        Ok(())
    }

    /// Fills output shapes; may fill unknown input shapes. Default: every
    /// output takes the first input's shape, inputs must agree.
    fn infer_shape(
        &self,
        attrs: &Attrs,
        ins: &mut [Option<Vec<i64>>],
        outs: &mut [Option<Vec<i64>>],
    ) -> OpResult<()> {
        let _ = attrs;
        let s = ins.iter().flatten().next().cloned().ok_or("no input shape is known")?;
        for slot in ins.iter_mut().chain(outs.iter_mut()) {
            match slot {
                Some(have) if *have != s => return Err(format!("shapes {s:?} and {have:?} must be equal")),
                _ => *slot = Some(s.clone()),
            }
        }
        Ok(())
    }

    /// Indices of the inputs the kernels write to. Default: none.
    fn mutate_inputs(&self, attrs: &Attrs) -> OpResult<Vec<usize>> {
        let _ = attrs;
        Ok(Vec::new())
    }
}

/// A stateless operator.
pub trait Operator: Signature {
    /// Computes the outputs, storing each as `req` says.
    fn forward(
        &self,
        attrs: &Attrs,
        inputs: &[Tensor],
        outputs: &mut [TensorMut],
        req: &[Req],
        res: &mut Resource,
    ) -> OpResult<()>;

    /// Whether [`backward`](Self::backward) is implemented (default false:
    /// the operator is not differentiable).
    fn has_backward(&self) -> bool {
        false
    }

    /// Computes one gradient per forward input. `inputs` are the output
    /// gradients, then the forward inputs, then the forward outputs.
    fn backward(
        &self,
        attrs: &Attrs,
        inputs: &[Tensor],
        in_grads: &mut [TensorMut],
        req: &[Req],
        res: &mut Resource,
    ) -> OpResult<()> {
        let _ = (attrs, inputs, in_grads, req, res);
        Err("this operator has no backward".into())
    }
}

/// The per-instance object of a stateful operator; dropped when the
/// operator instance dies.
pub trait State: Send + 'static {
    /// Computes the outputs.
    fn forward(
        &mut self,
        inputs: &[Tensor],
        outputs: &mut [TensorMut],
        req: &[Req],
        res: &mut Resource,
    ) -> OpResult<()>;

    /// Computes one gradient per forward input (inputs laid out as for
    /// [`Operator::backward`]). Default: not differentiable.
    fn backward(
        &mut self,
        inputs: &[Tensor],
        in_grads: &mut [TensorMut],
        req: &[Req],
        res: &mut Resource,
    ) -> OpResult<()> {
        let _ = (inputs, in_grads, req, res);
        Err("this operator has no backward".into())
    }
}

/// A stateful operator: creates a [`State`] per operator instance.
pub trait StatefulOperator: Signature {
    /// Creates the state for these attributes, input shapes and dtypes.
    fn create_state(
        &self,
        attrs: &Attrs,
        in_shapes: &[Vec<i64>],
        in_types: &[DType],
    ) -> OpResult<Box<dyn State>>;
}
