//! Log densities of the distributions and their partial derivatives, the
//! maths behind the `_random_pdf_*` operators (all in f64).

use libm::lgamma;

/// The digamma function ψ(x) = d/dx ln Γ(x).
pub fn digamma(x: f64) -> f64 {
    if x.is_nan() || (x <= 0.0 && x == x.floor()) {
        return f64::NAN;
    }
    if x < 0.0 {
        // reflection: ψ(x) = ψ(1 - x) - π / tan(πx)
        return digamma(1.0 - x) - std::f64::consts::PI / (std::f64::consts::PI * x).tan();
    }
    let (mut x, mut acc) = (x, 0.0);
    while x < 10.0 {
        acc -= 1.0 / x;
        x += 1.0;
    }
    let f = 1.0 / (x * x);
    let series = f * (1.0 / 12.0 - f * (1.0 / 120.0 - f * (1.0 / 252.0 - f * (1.0 / 240.0 - f / 132.0))));
    acc + x.ln() - 0.5 / x - series
}

/// `x·ln(y)`, taken as 0 when `x` is 0 (the densities' convention).
fn xlogy(x: f64, y: f64) -> f64 {
    if x == 0.0 {
        0.0
    } else {
        x * y.ln()
    }
}

/// The distributions with densities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PdfKind {
    /// Uniform on `[low, high]`.
    Uniform,
    /// Normal with mean `mu` and standard deviation `sigma`.
    Normal,
    /// Gamma with shape `alpha` and rate `beta`.
    Gamma,
    /// Exponential with rate `lam`.
    Exponential,
    /// Poisson with rate `lam`.
    Poisson,
    /// Negative binomial with `k` successes of probability `p`.
    NegativeBinomial,
    /// Generalized negative binomial with mean `mu` and dispersion `alpha`.
    GeneralizedNegativeBinomial,
    /// Dirichlet with concentrations `alpha` (over the last axis).
    Dirichlet,
}

impl PdfKind {
    /// True for distributions of counts (no gradient w.r.t. the sample).
    pub fn discrete(self) -> bool {
        matches!(self, PdfKind::Poisson | PdfKind::NegativeBinomial | PdfKind::GeneralizedNegativeBinomial)
    }
}

/// ln p(x | params) of a scalar distribution; with `grad`, also stores
/// d/dx in `grad[0]` and d/dparam_i in `grad[1 + i]`.
pub fn log_pdf(kind: PdfKind, x: f64, p: &[f64], grad: Option<&mut [f64]>) -> f64 {
    let mut g = [0.0f64; 3];
    let lp = match kind {
        PdfKind::Uniform => {
            let (low, high) = (p[0], p[1]);
            if x < low || x > high {
                f64::NEG_INFINITY
            } else {
                let w = high - low;
                g[1] = 1.0 / w;
                g[2] = -1.0 / w;
                -w.ln()
            }
        }
        PdfKind::Normal => {
            let (mu, sigma) = (p[0], p[1]);
            let d = x - mu;
            let s2 = sigma * sigma;
            g[0] = -d / s2;
            g[1] = d / s2;
            g[2] = d * d / (s2 * sigma) - 1.0 / sigma;
            -d * d / (2.0 * s2) - sigma.ln() - 0.5 * (2.0 * std::f64::consts::PI).ln()
        }
        PdfKind::Gamma => {
            let (alpha, beta) = (p[0], p[1]);
            g[0] = (alpha - 1.0) / x - beta;
            g[1] = beta.ln() + x.ln() - digamma(alpha);
            g[2] = alpha / beta - x;
            alpha * beta.ln() + (alpha - 1.0) * x.ln() - beta * x - lgamma(alpha)
        }
        PdfKind::Exponential => {
            let lam = p[0];
            g[0] = -lam;
            g[1] = 1.0 / lam - x;
            lam.ln() - lam * x
        }
        PdfKind::Poisson => {
            let lam = p[0];
            g[1] = x / lam - 1.0;
            xlogy(x, lam) - lam - lgamma(x + 1.0)
        }
        PdfKind::NegativeBinomial => {
            let (k, prob) = (p[0], p[1]);
            g[1] = digamma(x + k) - digamma(k) + prob.ln();
            g[2] = k / prob - x / (1.0 - prob);
            neg_binomial(x, k, prob)
        }
        PdfKind::GeneralizedNegativeBinomial => {
            let (mu, alpha) = (p[0], p[1]);
            if alpha == 0.0 {
                g[1] = x / mu - 1.0;
                xlogy(x, mu) - mu - lgamma(x + 1.0)
            } else {
                let k = 1.0 / alpha;
                let prob = 1.0 / (mu * alpha + 1.0);
                let dk = digamma(x + k) - digamma(k) + prob.ln();
                let dp = k / prob - x / (1.0 - prob);
                g[1] = -dp * alpha * prob * prob;
                g[2] = -dk / (alpha * alpha) - dp * mu * prob * prob;
                neg_binomial(x, k, prob)
            }
        }
        PdfKind::Dirichlet => unreachable!("the Dirichlet density is vector-valued: see log_pdf_dirichlet"),
    };
    if let Some(out) = grad {
        let n = out.len();
        out.copy_from_slice(&g[..n]);
    }
    lp
}

fn neg_binomial(x: f64, k: f64, p: f64) -> f64 {
    lgamma(x + k) - lgamma(x + 1.0) - lgamma(k) + k * p.ln() + xlogy(x, 1.0 - p)
}

/// ln p(x | alpha) of the Dirichlet distribution over `x.len()` classes;
/// with gradients, stores d/dx_i in `dx` and d/dalpha_i in `dalpha`.
pub fn log_pdf_dirichlet(x: &[f64], alpha: &[f64], grads: Option<(&mut [f64], &mut [f64])>) -> f64 {
    let sum: f64 = alpha.iter().sum();
    let mut lp = lgamma(sum);
    for (&xi, &ai) in x.iter().zip(alpha) {
        lp += (ai - 1.0) * xi.ln() - lgamma(ai);
    }
    if let Some((dx, da)) = grads {
        let ds = digamma(sum);
        for i in 0..x.len() {
            dx[i] = (alpha[i] - 1.0) / x[i];
            da[i] = ds - digamma(alpha[i]) + x[i].ln();
        }
    }
    lp
}
