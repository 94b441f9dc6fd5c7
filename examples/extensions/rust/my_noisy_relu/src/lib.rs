//! `my_noisy_relu`: relu(x + u) with u uniform in [-0.5, 0.5), drawn from
//! the call's random generator (seeded from oxnet's global seed, so
//! `oxnet_core::random::seed(s)` / `mx.random.seed(s)` repeats the output).
//! Its gradient passes the output gradient where the noisy input was
//! positive, using a workspace copy of the noise recomputed in forward.

use oxnet_sdk::*;

struct MyNoisyRelu;

impl Signature for MyNoisyRelu {
    fn parse_attrs(&self, _attrs: &Attrs) -> OpResult<(usize, usize)> {
        Ok((1, 1))
    }
}

impl Operator for MyNoisyRelu {
    fn forward(
        &self,
        attrs: &Attrs,
        ins: &[Tensor],
        outs: &mut [TensorMut],
        req: &[Req],
        res: &mut Resource,
    ) -> OpResult<()> {
        let scale: f32 = attrs.parse_or("scale", 1.0)?;
        let x = ins[0].as_slice::<f32>()?;
        let noise = res.workspace::<f32>(x.len())?;
        let mut rng = res.rng()?;
        for n in noise.iter_mut() {
            *n = scale * rng.uniform_f32(-0.5, 0.5);
        }
        let y = outs[0].as_mut_slice::<f32>()?;
        for ((y, &x), &n) in y.iter_mut().zip(x).zip(noise.iter()) {
            req[0].store(y, (x + n).max(0.0));
        }
        Ok(())
    }

    fn has_backward(&self) -> bool {
        true
    }

    /// inputs: [out_grad, x, y]; the gradient flows where the output is positive.
    fn backward(
        &self,
        _: &Attrs,
        ins: &[Tensor],
        grads: &mut [TensorMut],
        req: &[Req],
        _: &mut Resource,
    ) -> OpResult<()> {
        let dy = ins[0].as_slice::<f32>()?;
        let y = ins[2].as_slice::<f32>()?;
        let dx = grads[0].as_mut_slice::<f32>()?;
        for ((g, &d), &y) in dx.iter_mut().zip(dy).zip(y) {
            req[0].store(g, if y > 0.0 { d } else { 0.0 });
        }
        Ok(())
    }
}

fn library() -> LibraryBuilder {
    LibraryBuilder::new().op("my_noisy_relu", MyNoisyRelu)
}

export_library!(library);
