//! The push options of the agent grammar: `push=URL` with `chunk=`, `pushformat=`, `service=`
//! and `labels=`. Collected while the option string is read ([`PushText`]), checked together at
//! its end ([`PushText::finish`]): the URL is parsed by `hpm_push::Target::parse` for the
//! format chosen, so a bad URL refuses the session with that crate's one line.

use hpm_push::{Format, Target};

use super::{parse_duration, OptionError, SamplerKind};

/// `chunk=` when not given: a period of a minute (JFR's and async-profiler's `loop` default).
pub const DEFAULT_CHUNK_SECS: u64 = 60;
/// `chunk=`: from a second to an hour, whole seconds (a period ends with a JFR chunk).
pub const MIN_CHUNK_SECS: u64 = 1;
pub const MAX_CHUNK_SECS: u64 = 3600;
/// `service=`: printable ASCII, at most this long.
pub const MAX_SERVICE_LEN: usize = 128;
/// An option's value is shown in its error cut to this many characters.
const SHOWN_MAX: usize = 80;
/// `labels=`: at most this many, keys and values at most this long.
pub const MAX_LABELS: usize = 16;
pub const MAX_LABEL_KEY_LEN: usize = 64;
pub const MAX_LABEL_VALUE_LEN: usize = 128;

/// A session's push, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushOptions {
    pub target: Target,
    /// Seconds of one period (`chunk=`).
    pub chunk_secs: u64,
    /// `service=`: the service's name (else found at session start).
    pub service: Option<String>,
    /// `labels=` (Pyroscope only), in the order given.
    pub labels: Vec<(String, String)>,
}

/// The push options' texts as given, until the whole string is read.
#[derive(Default)]
pub(super) struct PushText {
    url: Option<String>,
    chunk: Option<String>,
    format: Option<String>,
    service: Option<String>,
    labels: Option<String>,
}

impl PushText {
    /// Takes `key=value` of a push option (the grammar's match names them).
    pub(super) fn take(&mut self, key: &str, value: &str) {
        let slot = match key {
            "push" => &mut self.url,
            "chunk" => &mut self.chunk,
            "pushformat" => &mut self.format,
            "service" => &mut self.service,
            _ => &mut self.labels,
        };
        *slot = Some(value.to_string());
    }

    /// The push, checked; `None` without `push=` (and then no other push option may be given).
    /// `flush_secs` becomes at most the period, so a JFR chunk ends at every period's end.
    pub(super) fn finish(self, sampler: SamplerKind, flush_secs: &mut u64) -> Result<Option<PushOptions>, OptionError> {
        let Some(url) = self.url else {
            let given = [
                ("chunk", &self.chunk),
                ("pushformat", &self.format),
                ("service", &self.service),
                ("labels", &self.labels),
            ]
            .into_iter()
            .find(|(_, v)| v.is_some());
            return match given {
                Some((key, _)) => Err(OptionError(format!(
                    "{key}= is an option of the push; give push=URL too (e.g. push=http://127.0.0.1:4318)"
                ))),
                None => Ok(None),
            };
        };
        if sampler == SamplerKind::Chain {
            return Err(OptionError(
                "push sends a profile every period, but sampler=chain completes its stacks only when the session \
                 ends; use the default sampler with push="
                    .into(),
            ));
        }
        let format = match self.format.as_deref() {
            None | Some("otlp") => Format::Otlp,
            Some("pyroscope") => Format::Pyroscope,
            Some(other) => return Err(OptionError(format!("pushformat={}: expected otlp or pyroscope", shown(other)))),
        };
        let target = Target::parse(&url, format).map_err(|e| OptionError(format!("push={}: {e}", shown(&url))))?;
        let chunk_secs = match self.chunk {
            None => DEFAULT_CHUNK_SECS,
            Some(t) => chunk_secs(&t)?,
        };
        let service = self.service.map(|s| service(&s, format)).transpose()?;
        let labels = match self.labels {
            None => Vec::new(),
            Some(_) if format == Format::Otlp => {
                return Err(OptionError(
                    "labels= are Pyroscope's (pushformat=pyroscope); with OTLP, add attributes in the collector \
                     (its resource processor)"
                        .into(),
                ))
            }
            Some(t) => labels(&t)?,
        };
        *flush_secs = (*flush_secs).min(chunk_secs);
        Ok(Some(PushOptions { target, chunk_secs, service, labels }))
    }
}

/// An option's value as its error shows it: what a terminal would obey escaped, cut to
/// [`SHOWN_MAX`] characters.
fn shown(value: &str) -> String {
    hpm_profile::text::clip(&hpm_profile::text::terminal_safe(value), SHOWN_MAX)
}

/// `chunk=`: whole seconds from [`MIN_CHUNK_SECS`] to [`MAX_CHUNK_SECS`].
fn chunk_secs(t: &str) -> Result<u64, OptionError> {
    parse_duration(t)
        .filter(|ns| ns % 1_000_000_000 == 0)
        .map(|ns| ns / 1_000_000_000)
        .filter(|s| (MIN_CHUNK_SECS..=MAX_CHUNK_SECS).contains(s))
        .ok_or_else(|| {
            OptionError(format!(
                "chunk={}: expected a period from 1s to 1h in whole seconds, such as 10s or 1m",
                shown(t)
            ))
        })
}

/// `service=`: printable ASCII without braces (Pyroscope's name carries labels in them); for
/// Pyroscope, a name it takes as it is (a name found, not given, is made one at session start).
fn service(s: &str, format: Format) -> Result<String, OptionError> {
    let ok = !s.is_empty()
        && s.len() <= MAX_SERVICE_LEN
        && s.bytes().all(|b| b.is_ascii_graphic() && b != b'{' && b != b'}');
    if !ok {
        return Err(OptionError(format!(
            "service={}: expected a name of 1 to {MAX_SERVICE_LEN} printable ASCII characters, no spaces or braces",
            shown(s)
        )));
    }
    if format == Format::Pyroscope && !hpm_push::pyroscope_app_ok(s) {
        return Err(OptionError(format!(
            "service={}: Pyroscope takes letters, digits and . _ - / : only in an application name; give one \
             such as service={}",
            shown(s),
            hpm_push::pyroscope_app_name(s)
        )));
    }
    Ok(s.to_string())
}

/// `labels=k1=v1;k2=v2`: keys `[A-Za-z_][A-Za-z0-9_.]*` (not `__`-prefixed: reserved), values
/// printable ASCII without `;{}=,"`.
fn labels(t: &str) -> Result<Vec<(String, String)>, OptionError> {
    let bad = |why: &str| {
        OptionError(format!(
            "labels={}: {why}; expected key=value pairs separated by `;`, such as labels=env=prod;region=eu",
            shown(t)
        ))
    };
    let mut out: Vec<(String, String)> = Vec::new();
    for pair in t.split(';').filter(|p| !p.is_empty()) {
        if out.len() == MAX_LABELS {
            return Err(bad(&format!("more than {MAX_LABELS} labels")));
        }
        let (k, v) = pair.split_once('=').ok_or_else(|| bad(&format!("`{}` has no `=`", shown(pair))))?;
        let key_ok = k.len() <= MAX_LABEL_KEY_LEN
            && k.bytes().next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
            && !k.starts_with("__");
        if !key_ok {
            return Err(bad(&format!("label name `{}` is not a name (letters, digits, `_`, `.`)", shown(k))));
        }
        // The key is a name from here on: it is shown as it is.
        let value_ok = !v.is_empty()
            && v.len() <= MAX_LABEL_VALUE_LEN
            && v.bytes().all(|b| b.is_ascii_graphic() && !b";{}=,\"".contains(&b));
        if !value_ok {
            return Err(bad(&format!("the value of `{k}` is empty, too long or has one of ;{{}}=,\" or a space")));
        }
        if out.iter().any(|(seen, _)| seen == k) {
            return Err(bad(&format!("`{k}` is given twice")));
        }
        out.push((k.to_string(), v.to_string()));
    }
    if out.is_empty() {
        return Err(bad("no label"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::options::parse;

    #[test]
    fn push_options_are_taken_together() {
        let o = parse("push=http://127.0.0.1:4318,chunk=10s,service=orders").unwrap();
        let p = o.push.expect("push");
        assert_eq!((p.chunk_secs, p.service.as_deref()), (10, Some("orders")));
        assert_eq!(p.target.format, hpm_push::Format::Otlp);
        assert_eq!(o.flush_secs, 5, "flush stays the shorter");
        let o = parse("push=http://127.0.0.1:4040,pushformat=pyroscope,chunk=2s,labels=env=prod;region=eu-1").unwrap();
        let p = o.push.unwrap();
        assert_eq!(p.target.format, hpm_push::Format::Pyroscope);
        assert_eq!(p.labels, [("env".to_string(), "prod".to_string()), ("region".into(), "eu-1".into())]);
        assert_eq!(o.flush_secs, 2, "a JFR chunk ends at every period's end");
        // The order of the options does not matter; the default period is a minute.
        let o = parse("pushformat=otlp,push=http://127.0.0.1:4318/v1development/profiles").unwrap();
        assert_eq!(o.push.unwrap().chunk_secs, 60);
        assert_eq!(parse("").unwrap().push, None);
        // OTLP takes any printable name; Pyroscope one of its characters.
        let o = parse("push=http://127.0.0.1:4318,service=a;b$c").unwrap();
        assert_eq!(o.push.unwrap().service.as_deref(), Some("a;b$c"));
        let o = parse("push=http://h:1,pushformat=pyroscope,service=shop-1.2/eu:a_b").unwrap();
        assert_eq!(o.push.unwrap().service.as_deref(), Some("shop-1.2/eu:a_b"));
    }

    #[test]
    fn push_options_are_refused_with_one_line() {
        for (bad, want) in [
            ("chunk=10s", "give push=URL too"),
            ("service=a", "give push=URL too"),
            ("pushformat=otlp", "give push=URL too"),
            ("labels=a=b", "give push=URL too"),
            ("push=http://h:1,chunk=500ms", "from 1s to 1h"),
            ("push=http://h:1,chunk=1500ms", "whole seconds"),
            ("push=http://h:1,chunk=2h", "from 1s to 1h"),
            ("push=http://h:1,chunk=often", "from 1s to 1h"),
            ("push=http://h:1,pushformat=zipkin", "otlp or pyroscope"),
            ("push=http://h:1,service=my app", "printable ASCII"),
            ("push=http://h:1,service=a{b}", "no spaces or braces"),
            ("push=http://h:1,pushformat=pyroscope,service=a;b", "service=a_b"),
            ("push=http://h:1,pushformat=pyroscope,service=a$b", "Pyroscope takes letters"),
            ("service=a&b,pushformat=pyroscope,push=http://h:1", "service=a_b"),
            ("push=http://h:1,labels=a=b", "Pyroscope's"),
            ("push=http://h:1,pushformat=pyroscope,labels=a", "has no `=`"),
            ("push=http://h:1,pushformat=pyroscope,labels=1a=b", "is not a name"),
            ("push=http://h:1,pushformat=pyroscope,labels=__name__=b", "is not a name"),
            ("push=http://h:1,pushformat=pyroscope,labels=a=", "is empty"),
            ("push=http://h:1,pushformat=pyroscope,labels=a=b c", "a space"),
            ("push=http://h:1,pushformat=pyroscope,labels=a=b;a=c", "given twice"),
            ("push=http://h:1,pushformat=pyroscope,labels=;", "no label"),
            ("push=http://h:1,sampler=chain", "sampler=chain"),
            ("push=", "needs a value"),
        ] {
            let e = parse(bad).unwrap_err().0;
            assert!(e.contains(want) && !e.contains('\n'), "{bad}: {e}");
        }
        let many: Vec<String> = (0..17).map(|i| format!("k{i}=v")).collect();
        let e = parse(&format!("push=http://h:1,pushformat=pyroscope,labels={}", many.join(";"))).unwrap_err().0;
        assert!(e.contains("more than 16 labels"), "{e}");
        let long = "s".repeat(129);
        assert!(parse(&format!("push=http://h:1,service={long}")).is_err());
        assert!(parse(&format!("push=http://h:1,service={}", &long[1..])).is_ok());
    }

    /// An option's value is shown in its error terminal-safe and cut: a URL of 3,000 bytes or
    /// one holding an escape sequence is named once, in a short line.
    #[test]
    fn refused_values_are_shown_safe_and_short() {
        let long = format!("http://127.0.0.1:4318/{}", "a".repeat(3000));
        for bad in [
            format!("push={long}"),
            format!("push=http://h:1/{}\x1b[2J", "a".repeat(3000)),
            "push=http://h:1\x1b[2J".to_string(),
            "push=http://h:1,pushformat=\x1b[2J".to_string(),
            format!("push=http://h:1,pushformat={}", "z".repeat(3000)),
            "push=http://h:1,chunk=\x1b[2J".to_string(),
            "push=http://h:1,pushformat=pyroscope,labels=\x1b[2J".to_string(),
            "push=http://h:1,pushformat=pyroscope,labels=a\x1b=b".to_string(),
        ] {
            let e = parse(&bad).unwrap_err().0;
            assert!(!e.contains('\x1b') && !e.contains('\n'), "{e}");
            assert!(e.len() < 400, "{} bytes: {}", e.len(), &e[..200]);
        }
    }

    /// The URL is `hpm_push::Target::parse`'s to check: its refusal is the session's, with the
    /// option named.
    #[test]
    fn a_url_the_pusher_refuses_refuses_the_session() {
        if let Err(e) = hpm_push::Target::parse("https://example.com", hpm_push::Format::Otlp) {
            let o = parse("push=https://example.com").unwrap_err().0;
            assert_eq!(o, format!("push=https://example.com: {e}"));
        }
    }
}
