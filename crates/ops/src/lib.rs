//! # oxnet-ops
//!
//! oxnet's built-in operators and their kernels. Every operator here is an
//! [`OpDef`](oxnet_core::OpDef) built with oxnet-core's public API only,
//! the same API a user's own operator crate has, and registered the same
//! way: [`register_operators!`](oxnet_core::register_operators) names this
//! crate's registrar, which the core registry runs on its first use. A
//! program gets the built-ins by linking this crate (the graph, nn and
//! Python layers do; a Rust program that uses only oxnet-core writes
//! `use oxnet_ops as _;` once).
//!
//! ```
//! use oxnet_ops as _;
//! use oxnet_core::{autograd, invoke1, NDArray, Req};
//!
//! let x = NDArray::from_vec(vec![0.0f32, 1.0, 2.0], &[3]).unwrap();
//! x.attach_grad(Req::Write).unwrap();
//! let y = {
//!     let _rec = autograd::record();
//!     invoke1("sigmoid", &[&x], &[]).unwrap()
//! };
//! y.backward().unwrap();
//! let g = x.grad().unwrap().to_vec::<f32>().unwrap();
//! assert!((g[0] - 0.25).abs() < 1e-6);
//! ```
//!
//! ## Layout
//!
//! One folder per operator family, one file per group of operators within
//! it; kernels that several families share live in [`kernels`]:
//!
//! | folder | operators |
//! |---|---|
//! | [`unary`] | element-wise maths on one array (`sigmoid`, `exp`, `relu`, `clip`, `BlockGrad`, `zeros_like`, ...) |
//! | [`binary`] | element-wise on two arrays or an array and a scalar: `elemwise_*`, `broadcast_*`, `_*_scalar`, comparisons, `add_n` |
//! | [`reduce`] | `sum`, `mean`, `prod`, `max`, `min`, `norm`, `argmax`, `argmin` |
//! | [`shape_ops`] | data movement: `reshape`, `transpose`, `concat`, `split`, `slice`, `tile`, `broadcast_to`, `cast`, ... |
//! | [`indexing`] | gathering by index: `take`, `pick`, `one_hot`, `where` |
//! | [`linalg`] | matrix products: `dot`, `batch_dot`, `FullyConnected`; MXNet's `linalg` family (`_linalg_gemm`, `_linalg_potrf`, `_linalg_gelqf`, `_linalg_syevd`, `_linalg_det`, ...) |
//! | [`nn`] | layers: activations, softmax family, losses, `Dropout`, `Embedding`, `CTCLoss` |
//! | [`conv`] | `Convolution` (1-D to 3-D, grouped and depth-wise, dilated) and `Deconvolution`, by im2col and the matrix product; `Correlation`; `contrib.DeformableConvolution` (bilinear taps at learned offsets) |
//! | [`pool`] | `Pooling`: max, avg, sum, lp over 1-D to 3-D windows; global; valid, full and same conventions |
//! | [`resize`] | `UpSampling` (nearest, bilinear), `contrib.BilinearResize2D`, `ROIPooling`, `contrib.ROIAlign`, `contrib.PSROIPooling`, `contrib.RROIAlign` |
//! | [`norm`] | `BatchNorm` (with `BatchNorm_v1`, `contrib.SyncBatchNorm`), its moving statistics auxiliary states; `LayerNorm`, `GroupNorm`, `InstanceNorm`; `L2Normalization`; `LRN` |
//! | [`optimizer`] | the optimizers' update steps (`sgd_mom_update`, `adam_update`, multi-tensor forms) |
//! | [`create`] | arrays without inputs: `_zeros`, `_ones`, `_full` |
//! | [`random`] | sampling from the global generator (`_random_*`, `_sample_*`, `_sample_multinomial`, `_shuffle`) and densities (`_random_pdf_*`) |
//! | [`sort`] | ordering: `topk`, `sort`, `argsort` |
//! | [`detection`] | bounding boxes and anchors: `contrib.box_iou`, `contrib.box_nms`, `contrib.box_encode`/`box_decode`, `contrib.bipartite_matching`, `contrib.MultiBoxPrior`/`MultiBoxTarget`/`MultiBoxDetection`, `contrib.Proposal`, `contrib.MultiProposal` |
//! | [`contrib`] | checks and small `contrib` maths: `all_finite`, `multi_all_finite`, `contrib.allclose`, `contrib.div_sqrt_dim`, `contrib.quadratic` |
//! | [`sequence`] | `SequenceMask`, `SequenceReverse`, `SequenceLast` over (time, batch, ...) with optional lengths |
//! | [`stats`] | statistics of values: `moments`, `_histogram` |
//! | [`image`] | `mx.nd.image` operators: `image.normalize` |
//! | [`kernels`] | shared kernels: matrix products, SIMD maths |
//!
//! Families to come take folders of their own beside these (`rnn`),
//! each with a `register` function that this crate's registrar
//! calls.

pub mod binary;
pub mod contrib;
pub mod conv;
pub mod create;
pub mod detection;
#[cfg(feature = "cuda")]
pub mod gpu;
pub mod image;
pub mod indexing;
pub mod kernels;
pub mod linalg;
pub mod nn;
pub mod norm;
pub mod optimizer;
mod partial_shape;
pub mod pool;
pub mod random;
pub mod reduce;
pub mod resize;
pub mod rnn;
pub mod sequence;
pub mod shape_ops;
pub mod sort;
pub mod stats;
pub mod unary;
pub mod util;

/// Registers every built-in operator with the core registry: this crate's
/// linked registrar, which the registry runs by itself before its first
/// look-up.
fn register() {
    unary::register();
    binary::register();
    reduce::register();
    linalg::register();
    nn::register();
    optimizer::register();
    shape_ops::register();
    indexing::register();
    conv::register();
    pool::register();
    norm::register();
    sort::register();
    random::register();
    create::register();
    resize::register();
    contrib::register();
    image::register();
    stats::register();
    sequence::register();
    rnn::register();
    detection::register();
    // last: it adds GPU kernels to the operators registered above
    #[cfg(feature = "cuda")]
    gpu::register();
}

oxnet_core::register_operators!(register);
