//! The distributions behind the samplers: their parameters, the checks
//! that reject invalid ones, and draws from oxnet's generator.

use oxnet_core::random::Generator;
use oxnet_core::{Error, Result};
use rand::Rng;
use rand_distr::{Distribution, Exp1, Gamma, Poisson, StandardNormal};

/// A distribution family as the operators name it: the MXNet name, its
/// parameters' names for the scalar (`_random_*`) and the array
/// (`_sample_*`) forms, and their defaults.
#[derive(Debug, Clone, Copy)]
pub struct Family {
    /// MXNet's name: `uniform`, `normal`, ...
    pub name: &'static str,
    /// Parameter names of `_random_<name>`.
    pub scalar_params: &'static [&'static str],
    /// Parameter (input) names of `_sample_<name>`.
    pub array_params: &'static [&'static str],
    /// Default values of the scalar parameters.
    pub defaults: &'static [f64],
    /// Whether the scalar form takes an integer first parameter (`k`).
    pub int_first: bool,
    /// One line on the distribution, for the operators' docs.
    pub about: &'static str,
    /// Builds the distribution from its parameter values.
    pub build: fn(&[f64]) -> Dist,
}

/// The seven families with scalar-parameter, array-parameter and `_like` forms.
pub static FAMILIES: [Family; 7] = [
    Family {
        name: "uniform",
        scalar_params: &["low", "high"],
        array_params: &["low", "high"],
        defaults: &[0.0, 1.0],
        int_first: false,
        about: "the uniform distribution on [low, high)",
        build: |p| Dist::Uniform { low: p[0], high: p[1] },
    },
    Family {
        name: "normal",
        scalar_params: &["loc", "scale"],
        array_params: &["mu", "sigma"],
        defaults: &[0.0, 1.0],
        int_first: false,
        about: "the normal distribution with mean loc (mu) and standard deviation scale (sigma)",
        build: |p| Dist::Normal { loc: p[0], scale: p[1] },
    },
    Family {
        name: "gamma",
        scalar_params: &["alpha", "beta"],
        array_params: &["alpha", "beta"],
        defaults: &[1.0, 1.0],
        int_first: false,
        about: "the gamma distribution with shape alpha and scale beta",
        build: |p| Dist::Gamma { alpha: p[0], beta: p[1] },
    },
    Family {
        name: "exponential",
        scalar_params: &["lam"],
        array_params: &["lam"],
        defaults: &[1.0],
        int_first: false,
        about: "the exponential distribution with rate lam (mean 1/lam)",
        build: |p| Dist::Exponential { lam: p[0] },
    },
    Family {
        name: "poisson",
        scalar_params: &["lam"],
        array_params: &["lam"],
        defaults: &[1.0],
        int_first: false,
        about: "the Poisson distribution with rate lam (values are counts stored as floats)",
        build: |p| Dist::Poisson { lam: p[0] },
    },
    Family {
        name: "negative_binomial",
        scalar_params: &["k", "p"],
        array_params: &["k", "p"],
        defaults: &[1.0, 1.0],
        int_first: true,
        about:
            "the negative binomial distribution: failures before the k-th success with success probability p",
        build: |p| Dist::NegativeBinomial { k: p[0], p: p[1] },
    },
    Family {
        name: "generalized_negative_binomial",
        scalar_params: &["mu", "alpha"],
        array_params: &["mu", "alpha"],
        defaults: &[1.0, 1.0],
        int_first: false,
        about: "the generalized negative binomial distribution with mean mu and dispersion alpha \
                (variance mu + alpha*mu^2)",
        build: |p| Dist::GeneralizedNegativeBinomial { mu: p[0], alpha: p[1] },
    },
];

/// One distribution with its parameter values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Dist {
    /// Uniform on `[low, high)`.
    Uniform { low: f64, high: f64 },
    /// Normal with mean `loc` and standard deviation `scale`.
    Normal { loc: f64, scale: f64 },
    /// Gamma with shape `alpha` and scale `beta`.
    Gamma { alpha: f64, beta: f64 },
    /// Exponential with rate `lam`.
    Exponential { lam: f64 },
    /// Poisson with rate `lam`.
    Poisson { lam: f64 },
    /// Failures before the `k`-th success, success probability `p`.
    NegativeBinomial { k: f64, p: f64 },
    /// Gamma-Poisson mixture with mean `mu` and dispersion `alpha`.
    GeneralizedNegativeBinomial { mu: f64, alpha: f64 },
}

/// How strictly [`Dist::check`] judges parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strictness {
    /// MXNet's checks of scalar parameters (a scale must be positive).
    Scalar,
    /// Parameter arrays: degenerate values (a zero scale) are allowed.
    Array,
}

fn bad(name: &str, msg: String) -> Error {
    Error::attr(name, msg)
}

impl Dist {
    /// Checks the parameters; `names` are the operator's names for them
    /// (the error names the offending one).
    pub fn check(&self, names: &[&str], strict: Strictness) -> Result<()> {
        let positive = |v: f64, i: usize, what: &str| -> Result<()> {
            let ok = if strict == Strictness::Scalar { v > 0.0 } else { v >= 0.0 };
            if ok && v.is_finite() {
                Ok(())
            } else {
                let kind = if strict == Strictness::Scalar { "positive" } else { "non-negative" };
                Err(bad(names[i], format!("{what} must be {kind} and finite, got {v}")))
            }
        };
        let non_negative = |v: f64, i: usize, what: &str| -> Result<()> {
            if v >= 0.0 && v.is_finite() {
                Ok(())
            } else {
                Err(bad(names[i], format!("{what} must be non-negative and finite, got {v}")))
            }
        };
        match *self {
            Dist::Uniform { low, high } => {
                if !(low.is_finite() && high.is_finite()) {
                    return Err(bad(
                        names[0],
                        format!("the bounds must be finite, got low={low}, high={high}"),
                    ));
                }
                if low > high {
                    return Err(bad(
                        names[0],
                        format!(
                            "must not exceed `{}` in the uniform distribution, got {low} > {high}",
                            names[1]
                        ),
                    ));
                }
                Ok(())
            }
            Dist::Normal { loc, scale } => {
                if !loc.is_finite() {
                    return Err(bad(names[0], format!("the mean must be finite, got {loc}")));
                }
                positive(scale, 1, "the standard deviation of the normal distribution")
            }
            Dist::Gamma { alpha, beta } => {
                positive(alpha, 0, "the shape of the gamma distribution")?;
                positive(beta, 1, "the scale of the gamma distribution")
            }
            Dist::Exponential { lam } => positive(lam, 0, "the rate of the exponential distribution"),
            Dist::Poisson { lam } => non_negative(lam, 0, "the rate of the Poisson distribution"),
            Dist::NegativeBinomial { k, p } => {
                positive(k, 0, "the number of successes of the negative binomial distribution")?;
                if (0.0..=1.0).contains(&p) {
                    Ok(())
                } else {
                    Err(bad(names[1], format!("the success probability must lie in [0, 1], got {p}")))
                }
            }
            Dist::GeneralizedNegativeBinomial { mu, alpha } => {
                non_negative(mu, 0, "the mean of the generalized negative binomial distribution")?;
                non_negative(alpha, 1, "the dispersion of the generalized negative binomial distribution")
            }
        }
    }

    /// A sampler for this (checked) distribution.
    pub fn sampler(&self) -> Sampler {
        match *self {
            Dist::Uniform { low, high } => Sampler::Uniform { low, width: high - low },
            Dist::Normal { loc, scale } => Sampler::Normal { loc, scale },
            Dist::Gamma { alpha, beta } => Sampler::Scaled(gamma(alpha, beta), 1.0),
            Dist::Exponential { lam } => Sampler::Exponential { scale: 1.0 / lam },
            Dist::Poisson { lam } => Sampler::Poisson(poisson(lam)),
            Dist::NegativeBinomial { k, p } => {
                if p >= 1.0 {
                    Sampler::Constant(0.0)
                } else if p <= 0.0 {
                    Sampler::Constant(f64::INFINITY)
                } else {
                    Sampler::GammaPoisson(gamma(k, (1.0 - p) / p))
                }
            }
            Dist::GeneralizedNegativeBinomial { mu, alpha } => {
                if mu == 0.0 {
                    Sampler::Constant(0.0)
                } else if alpha == 0.0 {
                    Sampler::Poisson(poisson(mu))
                } else {
                    Sampler::GammaPoisson(gamma(1.0 / alpha, alpha * mu))
                }
            }
        }
    }
}

fn gamma(shape: f64, scale: f64) -> Option<Gamma<f64>> {
    Gamma::new(shape, scale).ok()
}

fn poisson(lam: f64) -> Option<Poisson<f64>> {
    if lam > 0.0 {
        Poisson::new(lam.min(Poisson::<f64>::MAX_LAMBDA)).ok()
    } else {
        None
    }
}

/// A prepared sampler (the distributions' constants computed once).
#[derive(Debug, Clone, Copy)]
pub enum Sampler {
    /// `low + width·u`, `u` uniform in `[0, 1)`.
    Uniform { low: f64, width: f64 },
    /// `loc + scale·z`, `z` standard normal.
    Normal { loc: f64, scale: f64 },
    /// `scale·e`, `e` standard exponential.
    Exponential { scale: f64 },
    /// A gamma draw times a factor (`None`: always zero).
    Scaled(Option<Gamma<f64>>, f64),
    /// A Poisson draw (`None`: rate zero).
    Poisson(Option<Poisson<f64>>),
    /// A Poisson draw whose rate is a gamma draw.
    GammaPoisson(Option<Gamma<f64>>),
    /// Always this value.
    Constant(f64),
}

impl Sampler {
    /// One draw.
    pub fn draw(&self, rng: &mut Generator) -> f64 {
        match *self {
            Sampler::Uniform { low, width } => low + width * rng.random::<f64>(),
            Sampler::Normal { loc, scale } => {
                let z: f64 = StandardNormal.sample(rng);
                loc + scale * z
            }
            Sampler::Exponential { scale } => {
                let e: f64 = Exp1.sample(rng);
                scale * e
            }
            Sampler::Scaled(g, f) => g.map_or(0.0, |g| f * g.sample(rng)),
            Sampler::Poisson(p) => p.map_or(0.0, |p| p.sample(rng)),
            Sampler::GammaPoisson(g) => {
                let lam = g.map_or(0.0, |g| g.sample(rng));
                poisson(lam).map_or(0.0, |p| p.sample(rng))
            }
            Sampler::Constant(v) => v,
        }
    }

    /// `out.len()` draws into `out`.
    pub fn fill(&self, rng: &mut Generator, out: &mut [f64]) {
        for v in out.iter_mut() {
            *v = self.draw(rng);
        }
    }
}

/// The family named `name`.
pub fn family(name: &str) -> Option<&'static Family> {
    FAMILIES.iter().find(|f| f.name == name)
}
