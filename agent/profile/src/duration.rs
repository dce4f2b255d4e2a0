//! The one grammar of a duration, wherever a user or a recording writes one: the agent's
//! options (`interval=`, `flush=`, `lock=`), `--from`/`--to` offsets, and the JDK's JFR
//! settings (`20 ms`).
//!
//! ```text
//! DURATION = NUMBER [SPACES] UNIT          surrounding spaces ignored
//! NUMBER   = ["+"] DIGITS ["." [DIGITS]]   or ["+"] "." DIGITS
//! UNIT     = ns | us | µs | ms | s | sec | m | min | h | d
//! ```
//!
//! `m` is a minute (never a metre nor a milli). The value is in nanoseconds, rounded to the
//! nearest (half up) when the number has more decimals than a nanosecond holds. Two callers'
//! habits are kept as an [`Accept`]: a number without a unit (seconds for a time offset,
//! refused elsewhere) and the longest unit (an offset stops at minutes). What range a
//! duration may take (zero, at most an hour...) is each caller's to check.

/// Which durations of the grammar a caller takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Accept {
    /// A number without a unit is seconds (otherwise it is refused).
    pub bare_is_seconds: bool,
    /// Units longer than this many nanoseconds are refused.
    pub longest_unit_ns: u64,
}

impl Accept {
    /// A unit required, every unit taken: the agent's options, JFR settings.
    pub const UNIT_REQUIRED: Accept = Accept { bare_is_seconds: false, longest_unit_ns: DAY_NS };
    /// A time from a recording's start (`--from`, `--to`): seconds without a unit, units up to
    /// minutes.
    pub const OFFSET: Accept = Accept { bare_is_seconds: true, longest_unit_ns: 60 * NS_PER_S };
}

/// Why a text is not a duration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DurationError {
    /// Not of the grammar (no number, an unknown unit, a missing unit).
    Syntax,
    /// Of the grammar, but more nanoseconds than 64 bits hold.
    TooLong,
}

const NS_PER_S: u64 = 1_000_000_000;
const DAY_NS: u64 = 86_400 * NS_PER_S;

/// Nanoseconds per `unit`, `None` for a word that is no unit.
fn unit_ns(unit: &str) -> Option<u64> {
    Some(match unit {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" | "sec" => NS_PER_S,
        "m" | "min" => 60 * NS_PER_S,
        "h" => 3_600 * NS_PER_S,
        "d" => DAY_NS,
        _ => return None,
    })
}

/// Parses `text` as a duration in nanoseconds (see the module's grammar).
pub fn parse_duration(text: &str, accept: Accept) -> Result<u64, DurationError> {
    let t = text.trim();
    let t = t.strip_prefix('+').unwrap_or(t);
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let per_unit = match unit.trim_start() {
        "" if accept.bare_is_seconds => NS_PER_S,
        u => unit_ns(u).filter(|&ns| ns <= accept.longest_unit_ns).ok_or(DurationError::Syntax)?,
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
        return Err(DurationError::Syntax);
    }
    let whole: u64 = if whole.is_empty() { 0 } else { whole.parse().map_err(|_| DurationError::TooLong)? };
    let whole_ns = whole.checked_mul(per_unit).ok_or(DurationError::TooLong)?;
    whole_ns.checked_add(fraction_ns(fraction, per_unit)).ok_or(DurationError::TooLong)
}

/// `0.DIGITS` of a unit of `per_unit` ns, rounded half up. Digits past the 19th weigh under
/// a millionth of a nanosecond and are left out.
fn fraction_ns(digits: &str, per_unit: u64) -> u64 {
    let digits = &digits[..digits.len().min(19)];
    if digits.is_empty() {
        return 0;
    }
    let scale = 10u128.pow(digits.len() as u32);
    let num: u128 = digits.parse().unwrap_or(0);
    ((num * u128::from(per_unit) + scale / 2) / scale) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(t: &str) -> Result<u64, DurationError> {
        parse_duration(t, Accept::UNIT_REQUIRED)
    }

    /// Every form the agent's options took (`interval=`, `flush=`, `lock=`): digits, then a
    /// unit with no space; a leading `+`; too many digits for 64 bits.
    #[test]
    fn the_options_forms() {
        assert_eq!(ns("10ms"), Ok(10_000_000));
        assert_eq!(ns("100us"), Ok(100_000));
        assert_eq!(ns("1s"), Ok(NS_PER_S));
        assert_eq!(ns("500000ns"), Ok(500_000));
        assert_eq!(ns("2m"), Ok(120 * NS_PER_S));
        assert_eq!(ns("+10ms"), Ok(10_000_000));
        assert_eq!(ns("0ms"), Ok(0));
        assert_eq!(ns("007s"), Ok(7 * NS_PER_S));
        assert_eq!(ns("18446744073709551615s"), Err(DurationError::TooLong));
        assert_eq!(ns("99999999999999999999ms"), Err(DurationError::TooLong));
        assert_eq!(ns("18446744073709551615ns"), Ok(u64::MAX));
        for bad in ["", "ms", "10", "fast", "10 parsecs", "1ks", "-1s", "1.2.3s", ".s", "s10"] {
            assert_eq!(ns(bad), Err(DurationError::Syntax), "{bad}");
        }
    }

    /// Every form `--from`/`--to` took as an offset: a decimal number, spaces around and
    /// before the unit, `sec`, `µs`, `min`, and seconds without a unit.
    #[test]
    fn the_time_offset_forms() {
        let s = |t| parse_duration(t, Accept::OFFSET);
        assert_eq!(s("2.5s"), Ok(2_500_000_000));
        assert_eq!(s("1500ms"), Ok(1_500_000_000));
        assert_eq!(s("250us"), Ok(250_000));
        assert_eq!(s("250µs"), Ok(250_000));
        assert_eq!(s("100ns"), Ok(100));
        assert_eq!(s("2m"), Ok(120 * NS_PER_S));
        assert_eq!(s("1.5min"), Ok(90 * NS_PER_S));
        assert_eq!(s("3"), Ok(3 * NS_PER_S));
        assert_eq!(s("3sec"), Ok(3 * NS_PER_S));
        assert_eq!(s(" 0.5 s "), Ok(500_000_000));
        assert_eq!(s(".5"), Ok(500_000_000));
        assert_eq!(s("5."), Ok(5 * NS_PER_S));
        assert_eq!(s("0"), Ok(0));
        assert_eq!(s("0.0000000015s"), Ok(2));
        assert_eq!(s("1.000000000000000000000001s"), Ok(NS_PER_S));
        assert_eq!(s("99999999999s"), Err(DurationError::TooLong));
        for bad in ["", ".", "soon", "2.5x", "1e3s", "1.2.3", "2.5h", "1d"] {
            assert_eq!(s(bad), Err(DurationError::Syntax), "{bad}");
        }
    }

    /// Every form a JDK recording's settings took: digits, a space, a unit up to days.
    #[test]
    fn the_jfr_setting_forms() {
        assert_eq!(ns("10 ms"), Ok(10_000_000));
        assert_eq!(ns("20ms"), Ok(20_000_000));
        assert_eq!(ns("1 s"), Ok(NS_PER_S));
        assert_eq!(ns("500 us"), Ok(500_000));
        assert_eq!(ns("100 ns"), Ok(100));
        assert_eq!(ns("1 h"), Ok(3_600 * NS_PER_S));
        assert_eq!(ns("1 d"), Ok(86_400 * NS_PER_S));
        assert_eq!(ns("0 ns"), Ok(0));
        assert_eq!(ns("everyChunk"), Err(DurationError::Syntax));
        assert_eq!(ns("999999 d"), Err(DurationError::TooLong));
    }
}
