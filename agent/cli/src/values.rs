//! Value parsers of the commands' options (clap `value_parser`s): their errors say what is
//! needed.

/// A percentage such as `10`, `10%` or `2e-2`, returned as a fraction.
pub(crate) fn percent_fraction(v: &str) -> Result<f64, String> {
    percent_value(v).map(|p| p / 100.0)
}

/// A positive whole number.
pub(crate) fn positive<T: std::str::FromStr + PartialOrd + Default>(v: &str) -> Result<T, String> {
    v.parse::<T>()
        .ok()
        .filter(|n| *n > T::default())
        .ok_or_else(|| format!("a positive whole number is needed, got `{v}`"))
}

/// A percentage between 0 and 100, `%` allowed.
pub(crate) fn percent_value(v: &str) -> Result<f64, String> {
    v.trim_end_matches('%')
        .parse::<f64>()
        .ok()
        .filter(|p| (0.0..=100.0).contains(p))
        .ok_or_else(|| format!("a percentage between 0 and 100 is needed, got `{v}`"))
}
