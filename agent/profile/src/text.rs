//! Small text helpers shared by the renderers and the sample filter's messages: escaping and
//! number formatting. A leaf: it imports nothing of hpm's.

use std::fmt::Write;

/// Escapes text for HTML/XML element content and attribute values. Control characters that
/// XML 1.0 forbids are replaced by U+FFFD so the document stays well-formed.
pub fn escape_xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Appends `s` as a JSON string literal that is also safe inside an HTML `<script>` element:
/// `<`, `>`, `&` and the JS line separators are written as `\u` escapes, so no name can
/// close the script or open a comment.
pub fn push_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Text a peer or a file controls, made harmless for a terminal: every control character but
/// newline and tab (ESC and the sequences it starts, which set the window title, colours or
/// the cursor; BEL, CR, backspace; the C1 controls, U+0080-U+009F, which some terminals obey
/// too) is written as a visible `\xNN` escape, and so are the characters that reorder or break
/// what is shown without being controls (the bidirectional overrides, embeddings and isolates,
/// U+202A-U+202E and U+2066-U+2069, which can make a line read as another; the line and
/// paragraph separators U+2028 and U+2029), as `\u{NNNN}`. A backslash stays as it is, so a
/// peer can write `\x1b` as text: it is then text, and obeys nothing. Borrowed when there is
/// nothing to escape.
pub fn terminal_safe(s: &str) -> std::borrow::Cow<'_, str> {
    let invisible = |c: char| matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}');
    let unsafe_char = |c: char| (c.is_control() && c != '\n' && c != '\t') || invisible(c);
    if !s.contains(unsafe_char) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if invisible(c) {
            let _ = write!(out, "\\u{{{:04x}}}", c as u32);
        } else if unsafe_char(c) {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `1234567` -> `1,234,567`.
pub fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// What a profile's numbers count: samples, a sampler's weight, or what the JVM's events
/// weigh (`--event`). Headers and tables name it, so a weight never reads as a sample count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Unit {
    #[default]
    Samples,
    /// The samples' period (`--weight`): ns of CPU for clock events, event counts otherwise.
    Weight,
    /// Bytes allocated (`--event alloc`).
    Bytes,
    /// Nanoseconds waited (`--event lock|monitor|park`).
    NsWaited,
}

impl Unit {
    /// What the numbers are, after a number: `samples`, `bytes allocated`, `ns waited`.
    pub fn noun(self) -> &'static str {
        match self {
            Unit::Samples => "samples",
            Unit::Weight => "weight",
            Unit::Bytes => "bytes allocated",
            Unit::NsWaited => "ns waited",
        }
    }

    /// The whole a share is of: `samples`, `bytes allocated`, `time waited`.
    pub fn whole(self) -> &'static str {
        match self {
            Unit::NsWaited => "time waited",
            _ => self.noun(),
        }
    }

    /// An amount for a header: `1,234 samples`, `950.7 MiB allocated`, `21.95 s waited`.
    pub fn amount(self, v: u64) -> String {
        match self {
            Unit::Bytes => format!("{} allocated", bytes(v)),
            Unit::NsWaited => format!("{} waited", duration_ns(v)),
            _ => format!("{} {}", group(v), self.noun()),
        }
    }

    /// An amount in a table cell: `1,234`, `950.7 MiB`, `21.95 s`.
    pub fn cell(self, v: u64) -> String {
        match self {
            Unit::Bytes => bytes(v),
            Unit::NsWaited => duration_ns(v),
            _ => group(v),
        }
    }
}

/// `512 B`, `12.5 KiB`, `950.7 MiB`, `3.2 GiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

/// Reasons with their counts, most first: `reason 12, other 3` (summary lines).
pub fn reason_list(reasons: &[(String, u64)]) -> String {
    let mut sorted = reasons.to_vec();
    sorted.sort_by_key(|e| std::cmp::Reverse(e.1));
    let list: Vec<String> = sorted.iter().map(|(r, n)| format!("{r} {}", group(*n))).collect();
    list.join(", ")
}

/// `bytes` in lower-case hex, two digits each, appended to `out`.
pub fn push_hex(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    // Bytes first, one check at the end: pushed as chars, megabytes of compiled code took a
    // tenth of the processor's time at each session's stop.
    let mut v = std::mem::take(out).into_bytes();
    v.extend(bytes.iter().flat_map(|&b| [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 15)]]));
    *out = String::from_utf8(v).expect("hex digits are ASCII");
}

/// `hex` (pairs of lower- or upper-case hex digits) as bytes, `None` if it is not hex.
pub fn parse_hex(hex: &[u8]) -> Option<Vec<u8>> {
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    hex.chunks_exact(2).map(|p| Some(digit(p[0])? << 4 | digit(p[1])?)).collect()
}

/// `part` as a percentage of `whole` with two decimals; `-` when `whole` is 0 (undefined).
pub fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".to_string()
    } else {
        format!("{:.2}%", part as f64 * 100.0 / whole as f64)
    }
}

/// A ratio with a precision that suits its size; `-` when the divisor is 0.
pub fn ratio(num: u64, den: u64) -> String {
    if den == 0 {
        return "-".to_string();
    }
    let r = num as f64 / den as f64;
    if r >= 1000.0 {
        format!("{r:.0}")
    } else if r >= 10.0 {
        format!("{r:.1}")
    } else if r >= 0.01 || r == 0.0 {
        format!("{r:.2}")
    } else {
        format!("{r:.2e}")
    }
}

/// A nanosecond span for humans: `10 ms`, `250 us`, `1.5 s`.
pub fn duration_ns(ns: u64) -> String {
    let trim = |v: f64, unit: &str| {
        let s = format!("{v:.3}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        format!("{s} {unit}")
    };
    if ns >= 1_000_000_000 {
        trim(ns as f64 / 1e9, "s")
    } else if ns >= 1_000_000 {
        trim(ns as f64 / 1e6, "ms")
    } else if ns >= 1_000 {
        trim(ns as f64 / 1e3, "us")
    } else {
        format!("{ns} ns")
    }
}

/// Cuts `s` to at most `max` characters, ending in `..` when cut.
pub fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    if max < 3 {
        return String::new();
    }
    let mut out: String = s.chars().take(max - 2).collect();
    out.push_str("..");
    out
}

/// The UTC date of Unix time `secs` (civil-from-days, no time zone database needed): year,
/// month, day and the seconds into that day.
pub fn civil_utc(secs: u64) -> (i64, i64, i64, u64) {
    let days = (secs / 86_400) as i64;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d, secs % 86_400)
}

/// Unix time `ns` as ISO 8601 in UTC to the millisecond (`2026-11-28T13:40:02.123Z`), the form
/// `--from` and `--to` take.
pub fn iso_utc(ns: u64) -> String {
    let secs = ns / 1_000_000_000;
    let (y, m, d, rem) = civil_utc(secs);
    let ms = ns % 1_000_000_000 / 1_000_000;
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_times_are_utc_to_the_millisecond() {
        // 2026-11-22 02:05:39 UTC, as `options::format_timestamp`'s test has it.
        assert_eq!(iso_utc(1_795_313_139_250_999_999), "2026-11-22T02:05:39.250Z");
        assert_eq!(iso_utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_utc(951_782_400_000_000_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn hex_round_trips_and_refuses_what_is_not_hex() {
        let mut s = String::from("x");
        push_hex(&mut s, &[0x00, 0x7f, 0xab, 0xff]);
        assert_eq!(s, "x007fabff");
        assert_eq!(parse_hex(b"007FabFF"), Some(vec![0x00, 0x7f, 0xab, 0xff]));
        assert_eq!(parse_hex(b"0g"), None);
    }

    #[test]
    fn escaping() {
        assert_eq!(escape_xml("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
        assert_eq!(escape_xml("x\u{1}y"), "x\u{FFFD}y");
        let mut s = String::new();
        push_json_string(&mut s, "</script><!--\"\\\n\u{2028}");
        assert_eq!(s, r#""\u003c/script\u003e\u003c!--\"\\\n\u2028""#);
    }

    #[test]
    fn terminal_text_keeps_lines_and_shows_controls() {
        assert!(matches!(terminal_safe("a\tb\nc é"), std::borrow::Cow::Borrowed("a\tb\nc é")));
        assert_eq!(
            terminal_safe("\x1b]0;owned\x07\x1b[31mred\r\u{9b}2J\x7f"),
            r"\x1b]0;owned\x07\x1b[31mred\x0d\x9b2J\x7f"
        );
        assert!(!terminal_safe("\x1b\x00\u{85}").chars().any(|c| c.is_control()));
        // What reorders a line ("Trojan Source") or breaks it without being a control.
        assert_eq!(
            terminal_safe("Admin\u{202e}gpj.exe\u{2066}x\u{2069}\u{2028}"),
            r"Admin\u{202e}gpj.exe\u{2066}x\u{2069}\u{2028}"
        );
    }

    #[test]
    fn numbers() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(1234567), "1,234,567");
        assert_eq!(pct(1, 3), "33.33%");
        assert_eq!(pct(1, 0), "-");
        assert_eq!(ratio(3, 2), "1.50");
        assert_eq!(ratio(1, 0), "-");
        assert_eq!(duration_ns(10_000_000), "10 ms");
        assert_eq!(duration_ns(1_500_000_000), "1.5 s");
        assert_eq!(duration_ns(250_000), "250 us");
        assert_eq!(clip("abcdef", 4), "ab..");
        assert_eq!(clip("abc", 4), "abc");
    }

    #[test]
    fn units_name_what_they_count() {
        use super::{bytes, Unit};
        assert_eq!(Unit::Samples.amount(1234), "1,234 samples");
        assert_eq!(Unit::Bytes.amount(996_847_616), "950.7 MiB allocated");
        assert_eq!(Unit::NsWaited.amount(6_803_253_449), "6.803 s waited");
        assert_eq!(Unit::NsWaited.cell(1_500_000), "1.5 ms");
        assert_eq!(
            (bytes(512), bytes(1536), bytes(u64::MAX)),
            ("512 B".into(), "1.5 KiB".into(), "16777216.0 TiB".into())
        );
    }
}
