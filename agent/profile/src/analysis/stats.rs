//! Statistics for the phase analysis (Georges et al., section 4): mean, coefficient of
//! variation, weighted CoV, Pearson correlation and one-way ANOVA with the p-value from the
//! F distribution. The F distribution's tail is computed with the regularized incomplete beta
//! function, evaluated by its continued fraction (modified Lentz method, as in Numerical
//! Recipes, section 6.4), and the log-gamma function by the Lanczos approximation.

/// Arithmetic mean; `None` for no values.
pub fn mean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        None
    } else {
        Some(xs.iter().sum::<f64>() / xs.len() as f64)
    }
}

/// Sample standard deviation (divisor n - 1); 0 for a single value, `None` for none.
pub fn std_dev(xs: &[f64]) -> Option<f64> {
    let m = mean(xs)?;
    if xs.len() < 2 {
        return Some(0.0);
    }
    let ss: f64 = xs.iter().map(|x| (x - m) * (x - m)).sum();
    Some((ss / (xs.len() - 1) as f64).sqrt())
}

/// Coefficient of variation: standard deviation over mean. `None` without values or with a
/// zero mean.
pub fn cov(xs: &[f64]) -> Option<f64> {
    let m = mean(xs)?;
    if m == 0.0 {
        return None;
    }
    Some(std_dev(xs)? / m.abs())
}

/// CoV averaged over groups after weighting each with its weight (Georges et al. weight a
/// phase by the execution time spent in it). Groups without a CoV are skipped.
pub fn weighted_cov(groups: &[(&[f64], f64)]) -> Option<f64> {
    let mut num = 0.0;
    let mut den = 0.0;
    for (xs, w) in groups {
        if let Some(c) = cov(xs) {
            num += c * w;
            den += w;
        }
    }
    if den > 0.0 {
        Some(num / den)
    } else {
        None
    }
}

/// Pearson correlation of paired values; `None` when fewer than two pairs or a side is
/// constant.
pub fn pearson(pairs: &[(f64, f64)]) -> Option<f64> {
    if pairs.len() < 2 {
        return None;
    }
    let n = pairs.len() as f64;
    let mx = pairs.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pairs.iter().map(|p| p.1).sum::<f64>() / n;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (x, y) in pairs {
        sxy += (x - mx) * (y - my);
        sxx += (x - mx) * (x - mx);
        syy += (y - my) * (y - my);
    }
    if sxx == 0.0 || syy == 0.0 {
        return None;
    }
    Some(sxy / (sxx * syy).sqrt())
}

/// Result of a one-way analysis of variance.
#[derive(Clone, Debug, PartialEq)]
pub struct Anova {
    /// Number of groups (phases), k.
    pub groups: usize,
    /// Number of observations, sum of n_i.
    pub observations: usize,
    /// Between-group sum of squares, sum_i n_i tau_i^2.
    pub ss_between: f64,
    /// Within-group sum of squares, sum_ij eps_ij^2.
    pub ss_within: f64,
    /// Degrees of freedom: (k - 1, N - k).
    pub df: (usize, usize),
    pub f: f64,
    /// P(F(df) > f).
    pub p: f64,
}

/// One-way ANOVA over groups of observations (Georges et al., section 4).
pub fn anova(groups: &[&[f64]]) -> Result<Anova, String> {
    let groups: Vec<&[f64]> = groups.iter().copied().filter(|g| !g.is_empty()).collect();
    let k = groups.len();
    let n: usize = groups.iter().map(|g| g.len()).sum();
    if k < 2 {
        return Err(format!("ANOVA needs at least 2 groups with observations, got {k}"));
    }
    if n <= k {
        return Err(format!("ANOVA needs more observations ({n}) than groups ({k})"));
    }
    if groups.iter().flat_map(|g| g.iter()).any(|x| !x.is_finite()) {
        return Err("ANOVA observations must be finite numbers".into());
    }
    let grand = groups.iter().flat_map(|g| g.iter()).sum::<f64>() / n as f64;
    let mut ss_between = 0.0;
    let mut ss_within = 0.0;
    for g in &groups {
        let m = g.iter().sum::<f64>() / g.len() as f64;
        ss_between += g.len() as f64 * (m - grand) * (m - grand);
        ss_within += g.iter().map(|x| (x - m) * (x - m)).sum::<f64>();
    }
    let df = (k - 1, n - k);
    let (f, p) = if ss_within == 0.0 {
        if ss_between == 0.0 {
            return Err("ANOVA: all observations are equal, F is undefined".into());
        }
        (f64::INFINITY, 0.0)
    } else {
        let f = (ss_between / df.0 as f64) / (ss_within / df.1 as f64);
        (f, f_sf(f, df.0 as f64, df.1 as f64))
    };
    Ok(Anova { groups: k, observations: n, ss_between, ss_within, df, f, p })
}

/// Survival function of the F distribution: P(X > f) for X ~ F(d1, d2).
pub fn f_sf(f: f64, d1: f64, d2: f64) -> f64 {
    if f.is_nan() || d1 <= 0.0 || d2 <= 0.0 {
        return f64::NAN;
    }
    if f <= 0.0 {
        return 1.0;
    }
    if f.is_infinite() {
        return 0.0;
    }
    // P(X > f) = I_{d2/(d2 + d1 f)}(d2/2, d1/2).
    inc_beta(d2 / 2.0, d1 / 2.0, d2 / (d2 + d1 * f))
}

/// Natural log of the gamma function for x > 0 (Lanczos, g = 7, 9 coefficients; relative
/// error below 1e-13 in double precision).
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Gamma(x) Gamma(1 - x) = pi / sin(pi x).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).abs().ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Regularized incomplete beta function I_x(a, b) for a, b > 0 and 0 <= x <= 1.
pub fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if !(a > 0.0 && b > 0.0) || x.is_nan() {
        return f64::NAN;
    }
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let front = ln_front.exp();
    // The continued fraction converges quickly for x < (a + 1) / (a + b + 2); use the symmetry
    // I_x(a, b) = 1 - I_{1-x}(b, a) otherwise.
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

/// Continued fraction for the incomplete beta function, by the modified Lentz method.
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const MAX_ITER: usize = 10_000;
    const EPS: f64 = 1e-15;
    const TINY: f64 = 1e-300;
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..=MAX_ITER {
        let m = m as f64;
        let m2 = 2.0 * m;
        // Even step: d_{2m} = m (b - m) x / ((a + 2m - 1)(a + 2m)).
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 / guard(1.0 + aa * d);
        c = guard(1.0 + aa / c);
        h *= d * c;
        // Odd step: d_{2m+1} = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1)).
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 / guard(1.0 + aa * d);
        c = guard(1.0 + aa / c);
        let delta = d * c;
        h *= delta;
        if (delta - 1.0).abs() < EPS {
            break;
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn ln_gamma_matches_factorials_and_half() {
        // Gamma(n) = (n - 1)!; Gamma(1/2) = sqrt(pi).
        let mut fact = 1.0f64;
        for n in 1..20 {
            assert!(close(ln_gamma(n as f64), fact.ln(), 1e-10), "n={n}");
            fact *= n as f64;
        }
        assert!(close(ln_gamma(0.5), std::f64::consts::PI.sqrt().ln(), 1e-12));
        assert!(close(ln_gamma(0.1), 2.252_712_651_734_206, 1e-10));
    }

    #[test]
    fn incomplete_beta_closed_forms() {
        for &x in &[0.01, 0.1, 0.3, 0.5, 0.77, 0.99] {
            // I_x(1, b) = 1 - (1 - x)^b and I_x(a, 1) = x^a.
            assert!(close(inc_beta(1.0, 3.5, x), 1.0 - (1.0 - x).powf(3.5), 1e-12));
            assert!(close(inc_beta(2.5, 1.0, x), x.powf(2.5), 1e-12));
            // I_x(a, b) = 1 - I_{1-x}(b, a).
            assert!(close(inc_beta(3.0, 7.0, x), 1.0 - inc_beta(7.0, 3.0, 1.0 - x), 1e-12));
        }
        // I_{1/2}(a, a) = 1/2 by symmetry.
        assert!(close(inc_beta(13.0, 13.0, 0.5), 0.5, 1e-12));
        // I_x(2, 2) = 3x^2 - 2x^3.
        assert!(close(inc_beta(2.0, 2.0, 0.3), 3.0 * 0.09 - 2.0 * 0.027, 1e-12));
    }

    #[test]
    fn f_tail_closed_form_and_table_values() {
        // For d1 = 2: P(F > f) = (1 + 2f/d2)^(-d2/2).
        for &(f, d2) in &[(0.5f64, 5.0f64), (3.354, 27.0), (10.0, 100.0), (40.0, 3.0)] {
            let exact = (1.0 + 2.0 * f / d2).powf(-d2 / 2.0);
            assert!(close(f_sf(f, 2.0, d2), exact, 1e-12), "f={f} d2={d2}");
        }
        // Published critical values (F tables): the tail at the critical value is alpha.
        assert!(close(f_sf(4.965, 1.0, 10.0), 0.05, 2e-4)); // F_0.05(1,10) = 4.965
        assert!(close(f_sf(3.326, 5.0, 10.0), 0.05, 2e-4)); // F_0.05(5,10) = 3.326
        assert!(close(f_sf(4.938, 3.0, 20.0), 0.01, 1e-4)); // F_0.01(3,20) = 4.938
        assert!(close(f_sf(2.165, 10.0, 30.0), 0.05, 2e-4)); // F_0.05(10,30) = 2.165
                                                             // F(1, d) is t(d)^2: P(|t_10| > 2.228) = 0.05.
        assert!(close(f_sf(2.228f64.powi(2), 1.0, 10.0), 0.05, 2e-4));
        // Far tails stay accurate instead of rounding to 0 (Georges et al. report < 1e-16).
        let tiny = f_sf(400.0, 2.0, 100.0); // = 9^-50 = 1.94e-48
        assert!(close(tiny / 9f64.powi(-50), 1.0, 1e-9), "{tiny}");
        assert_eq!(f_sf(288.24, 19.0, 32206.0), 0.0); // below the smallest double
    }

    /// R's `PlantGrowth` data (Dobson 1983): `summary(aov(weight ~ group))` reports
    /// Df 2 and 27, Sum Sq 3.766 and 10.492, F value 4.846, Pr(>F) 0.0159.
    #[test]
    fn anova_reproduces_plant_growth_textbook_example() {
        let ctrl = [4.17, 5.58, 5.18, 6.11, 4.50, 4.61, 5.17, 4.53, 5.33, 5.14];
        let trt1 = [4.81, 4.17, 4.41, 3.59, 5.87, 3.83, 6.03, 4.89, 4.32, 4.69];
        let trt2 = [6.31, 5.12, 5.54, 5.50, 5.37, 5.29, 4.92, 6.15, 5.80, 5.26];
        let a = anova(&[&ctrl, &trt1, &trt2]).unwrap();
        assert_eq!(a.df, (2, 27));
        assert!(close(a.ss_between, 3.766, 5e-4), "{}", a.ss_between);
        assert!(close(a.ss_within, 10.492, 5e-4), "{}", a.ss_within);
        assert!(close(a.f, 4.846, 5e-4), "{}", a.f);
        assert!(close(a.p, 0.0159, 5e-5), "{}", a.p);
    }

    #[test]
    fn anova_rejects_degenerate_input() {
        assert!(anova(&[&[1.0, 2.0]]).is_err());
        assert!(anova(&[&[1.0], &[2.0]]).is_err());
        assert!(anova(&[&[1.0, 1.0], &[1.0, 1.0]]).is_err());
        let a = anova(&[&[1.0, 1.0], &[2.0, 2.0]]).unwrap();
        assert_eq!((a.f, a.p), (f64::INFINITY, 0.0));
        assert!(anova(&[&[1.0, f64::NAN], &[2.0, 3.0]]).is_err());
    }

    #[test]
    fn cov_and_weighted_cov() {
        assert_eq!(cov(&[2.0, 2.0, 2.0]), Some(0.0));
        assert_eq!(cov(&[]), None);
        assert_eq!(cov(&[0.0, 0.0]), None);
        // mean 5, sample sd sqrt(32/7) for the classic 2,4,4,4,5,5,7,9.
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert!(close(cov(&xs).unwrap(), (32.0f64 / 7.0).sqrt() / 5.0, 1e-12));
        let a = [1.0, 3.0]; // cov = sqrt(2)/2
        let b = [5.0, 5.0]; // cov = 0
        let w = weighted_cov(&[(&a, 1.0), (&b, 3.0)]).unwrap();
        assert!(close(w, (2.0f64).sqrt() / 2.0 / 4.0, 1e-12));
    }

    #[test]
    fn pearson_basics() {
        assert!(close(pearson(&[(1.0, 2.0), (2.0, 4.0), (3.0, 6.0)]).unwrap(), 1.0, 1e-12));
        assert!(close(pearson(&[(1.0, 3.0), (2.0, 2.0), (3.0, 1.0)]).unwrap(), -1.0, 1e-12));
        assert_eq!(pearson(&[(1.0, 1.0), (2.0, 1.0)]), None);
    }
}
