//! The macros optimizers are declared with, so that each piece is written
//! once:
//!
//! - [`declare_optimizer!`] writes the struct (an [`OptimizerBase`] and the
//!   hyper-parameters as public fields, each with its type, default and
//!   doc), `new()` with the defaults, `Default`, and the text access to the
//!   hyper-parameters by name;
//! - [`optimizer_accessors!`], inside `impl Optimizer for ...`, writes the
//!   trait's `name`, `base`, `base_mut`, `params` and `set_param` from it;
//! - [`fused_master_copy!`], inside `impl Optimizer for ...`, writes the
//!   update methods of an optimizer whose fused operators take the float32
//!   master copy themselves.
//!
//! A hyper-parameter's type says how it is shown and parsed: `f64` is a
//! number, `Option<f64>` a number or `None`, `bool` a flag (see
//! [`ParamValue`]'s `From` conversions and [`FromText`]).
//!
//! [`OptimizerBase`]: super::OptimizerBase
//! [`ParamValue`]: super::ParamValue
//! [`FromText`]: super::base::FromText

/// Declares an optimizer struct:
///
/// ```ignore
/// declare_optimizer! {
///     /// Doc of the struct.
///     pub struct Name {
///         base: OptimizerBase::new("name", Some(0.001)),
///         /// Doc of a hyper-parameter.
///         pub beta1: f64 = 0.9,
///         // values kept between updates, not hyper-parameters:
///         internal m_schedule: f64 = 1.0,
///     }
/// }
/// ```
macro_rules! declare_optimizer {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            base: $base:expr,
            $( $(#[$fmeta:meta])* pub $field:ident: $ty:ty = $default:expr, )*
            $( internal $ifield:ident: $ity:ty = $idefault:expr, )*
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            base: $crate::optim::OptimizerBase,
            $(
                $(#[$fmeta])*
                #[doc = concat!("\n\nDefault: `", stringify!($default), "`.")]
                pub $field: $ty,
            )*
            $( $ifield: $ity, )*
        }

        impl Default for $name {
            fn default() -> Self {
                $name::new()
            }
        }

        impl $name {
            /// With MXNet's defaults (each field names its own).
            pub fn new() -> $name {
                $name { base: $base, $( $field: $default, )* $( $ifield: $idefault, )* }
            }

            /// The own hyper-parameters by name.
            fn own_params(&self) -> Vec<(&'static str, $crate::optim::ParamValue)> {
                vec![$( (stringify!($field), $crate::optim::ParamValue::from(self.$field)), )*]
            }

            /// Sets an own hyper-parameter from its text; `Ok(false)` for other keys.
            #[allow(unused_variables)]
            fn set_own_param(&mut self, key: &str, value: &str) -> oxnet_core::Result<bool> {
                $(
                    if key == stringify!($field) {
                        let text = $crate::optim::base::Text { opt: self.base.name(), key, text: value };
                        self.$field = $crate::optim::base::FromText::from_text(&text)?;
                        return Ok(true);
                    }
                )*
                Ok(false)
            }
        }
    };
}

/// The [`Optimizer`](super::Optimizer) methods that only reach the fields
/// [`declare_optimizer!`] declared: `name`, `base`, `base_mut`, `params`,
/// `set_param`.
macro_rules! optimizer_accessors {
    () => {
        fn name(&self) -> &'static str {
            self.base.name()
        }

        fn base(&self) -> &$crate::optim::OptimizerBase {
            &self.base
        }

        fn base_mut(&mut self) -> &mut $crate::optim::OptimizerBase {
            &mut self.base
        }

        fn params(&self) -> Vec<(&'static str, $crate::optim::ParamValue)> {
            self.own_params()
        }

        fn set_param(&mut self, key: &str, value: &str) -> oxnet_core::Result<bool> {
            self.set_own_param(key, value)
        }
    };
}

/// The update methods of an optimizer whose fused operators take the
/// float32 master copy themselves (the `mp_` operators, the copy last in
/// the state): `update` and `update_multi_precision` call the optimizer's
/// `step(.., mp)`, `mp` true when a master copy is kept.
///
/// - `fused_master_copy!(one)`: `step(index, weight, grad, state, mp)`;
/// - `fused_master_copy!(many)`: `step(batch, mp)` with a
///   [`Batch`](super::sgd::Batch) whose updates are already counted, which
///   also serves `update_multi` (one multi-tensor operator call).
macro_rules! fused_master_copy {
    (one) => {
        fn update(
            &mut self,
            index: usize,
            weight: &NDArray,
            grad: &NDArray,
            state: &[NDArray],
        ) -> Result<()> {
            self.step(index, weight, grad, state, false)
        }

        fn update_multi_precision(
            &mut self,
            index: usize,
            weight: &NDArray,
            grad: &NDArray,
            state: &[NDArray],
        ) -> Result<()> {
            let mp = self.base.keeps_master_copy(weight.dtype());
            self.step(index, weight, grad, state, mp)
        }
    };
    (many) => {
        fn update(
            &mut self,
            index: usize,
            weight: &NDArray,
            grad: &NDArray,
            state: &[NDArray],
        ) -> Result<()> {
            self.base.update_count(&[index]);
            let one = $crate::optim::sgd::Batch {
                indices: &[index],
                weights: std::slice::from_ref(weight),
                grads: std::slice::from_ref(grad),
                states: &[state],
            };
            self.step(one, false)
        }

        fn update_multi_precision(
            &mut self,
            index: usize,
            weight: &NDArray,
            grad: &NDArray,
            state: &[NDArray],
        ) -> Result<()> {
            self.update_multi(&[index], std::slice::from_ref(weight), std::slice::from_ref(grad), &[state])
        }

        fn update_multi(
            &mut self,
            indices: &[usize],
            weights: &[NDArray],
            grads: &[NDArray],
            states: &[&[NDArray]],
        ) -> Result<()> {
            if indices.is_empty() {
                return Ok(());
            }
            let mp = self.base.keeps_master_copy(weights[0].dtype());
            self.base.update_count(indices);
            self.step($crate::optim::sgd::Batch { indices, weights, grads, states }, mp)
        }
    };
}
