//! The phases options of the agent grammar: `phases=TRACE` with `select=`, `phasesjar=` and
//! `phasesmax=`. Collected while the option string is read ([`PhasesText`]) and checked together
//! at its end ([`PhasesText::finish`]). Only the text is checked here (no file is read: the
//! grammar is JVM- and file-free); the phases source reads the phase file and finds the jar
//! when it plans.

use super::OptionError;

/// The bytecode rewriter's jar when `phasesjar=` is not given: this name, in the directory
/// of libhpm.so.
pub const JAR_NAME: &str = "hpm-phases.jar";
/// `phasesmax=` when not given: the trace stops growing at 2 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 2 << 30;
/// `phasesmax=`: from 1 MiB to 1 TiB.
pub const MIN_MAX_BYTES: u64 = 1 << 20;
pub const MAX_MAX_BYTES: u64 = 1 << 40;

/// A session's phases trace, as the options ask for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhasesOptions {
    /// `phases=`: the trace file (`%p`, `%t` expanded as in `file=`).
    pub trace: String,
    /// `select=`: the phase file; the measurement run instruments exactly its methods.
    pub select: Option<String>,
    /// `phasesjar=`; `None`: [`JAR_NAME`] beside libhpm.so.
    pub jar: Option<String>,
    /// `phasesmax=`: the trace's bound in bytes.
    pub max_bytes: u64,
}

/// The phases options' texts as given, until the whole string is read.
#[derive(Default)]
pub(super) struct PhasesText {
    trace: Option<String>,
    select: Option<String>,
    jar: Option<String>,
    max: Option<String>,
}

impl PhasesText {
    /// Takes `key=value` of a phases option (the grammar's match names them).
    pub(super) fn take(&mut self, key: &str, value: &str) {
        let slot = match key {
            "phases" => &mut self.trace,
            "select" => &mut self.select,
            "phasesjar" => &mut self.jar,
            _ => &mut self.max,
        };
        *slot = Some(value.to_string());
    }

    /// The phases trace, checked; `None` without `phases=` (and then no other phases option
    /// may be given).
    pub(super) fn finish(self) -> Result<Option<PhasesOptions>, OptionError> {
        let Some(trace) = self.trace else {
            let given = [("select", &self.select), ("phasesjar", &self.jar), ("phasesmax", &self.max)]
                .into_iter()
                .find(|(_, v)| v.is_some());
            return match given {
                Some((key, _)) => Err(OptionError(format!(
                    "{key}= is an option of the phases trace; give phases=TRACEFILE too (e.g. phases=run.hpmtrace)"
                ))),
                None => Ok(None),
            };
        };
        let max_bytes = match self.max {
            None => DEFAULT_MAX_BYTES,
            Some(v) => parse_size(&v).filter(|n| (MIN_MAX_BYTES..=MAX_MAX_BYTES).contains(n)).ok_or_else(|| {
                OptionError(format!("phasesmax={v}: expected a size from 1m to 1t, such as 512m or 2g"))
            })?,
        };
        Ok(Some(PhasesOptions { trace, select: self.select, jar: self.jar, max_bytes }))
    }
}

/// `4096`, `512k`, `64m`, `2g`, `1t` (a `b` after the unit allowed) in bytes; `None` for
/// anything else or more than 64 bits hold.
fn parse_size(v: &str) -> Option<u64> {
    let lower = v.trim().to_ascii_lowercase();
    let body = lower.strip_suffix('b').unwrap_or(&lower);
    let (num, shift) = match body.as_bytes().last()? {
        b'k' => (&body[..body.len() - 1], 10),
        b'm' => (&body[..body.len() - 1], 20),
        b'g' => (&body[..body.len() - 1], 30),
        b't' => (&body[..body.len() - 1], 40),
        _ => (body, 0),
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    num.parse::<u64>().ok()?.checked_mul(1 << shift)
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;

    #[test]
    fn phases_takes_a_trace_and_its_options() {
        let p = parse("phases=run.hpmtrace").unwrap().phases.unwrap();
        assert_eq!(p, PhasesOptions { trace: "run.hpmtrace".into(), select: None, jar: None, max_bytes: 2 << 30 });
        let p = parse("phases=m-%p.hpmtrace,select=p.txt,phasesjar=/opt/hpm-phases.jar,phasesmax=64m")
            .unwrap()
            .phases
            .unwrap();
        assert_eq!(p.select.as_deref(), Some("p.txt"));
        assert_eq!(p.jar.as_deref(), Some("/opt/hpm-phases.jar"));
        assert_eq!(p.max_bytes, 64 << 20);
        assert_eq!(parse("").unwrap().phases, None, "off by default");
    }

    #[test]
    fn phases_runs_beside_the_cpu_event() {
        let o = parse("phases=t.hpmtrace,interval=1ms").unwrap();
        assert!(o.cpu && o.phases.is_some());
        assert_eq!(o.period(), 1_000_000);
        let o = parse("event=alloc,phases=t.hpmtrace").unwrap();
        assert!(!o.cpu && o.phases.is_some());
    }

    #[test]
    fn the_phases_options_need_phases() {
        for (text, key) in
            [("select=p.txt", "select="), ("phasesjar=x.jar", "phasesjar="), ("phasesmax=1g", "phasesmax=")]
        {
            let e = parse(text).unwrap_err().0;
            assert!(e.starts_with(key) && e.contains("give phases=TRACEFILE too") && !e.contains('\n'), "{text}: {e}");
        }
        let e = parse("phases").unwrap_err().0;
        assert!(e.contains("option `phases` needs a value") && e.contains("phases=run.hpmtrace"), "{e}");
        let e = parse("phases=t.hpmtrace,select=").unwrap_err().0;
        assert!(e.contains("option `select` needs a value"), "{e}");
    }

    #[test]
    fn phasesmax_is_a_size_within_its_range() {
        for (text, bytes) in
            [("1m", 1 << 20), ("1048576", 1 << 20), ("512MB", 512 << 20), ("2g", 2 << 30), ("1t", 1 << 40)]
        {
            let o = parse(&format!("phases=t.hpmtrace,phasesmax={text}")).unwrap();
            assert_eq!(o.phases.unwrap().max_bytes, bytes, "{text}");
        }
        for bad in ["1023k", "2t", "0", "lots", "g", "-1m", "99999999999999999999", "18014398509481984k"] {
            let e = parse(&format!("phases=t.hpmtrace,phasesmax={bad}")).unwrap_err().0;
            assert!(e.contains("from 1m to 1t") && !e.contains('\n'), "{bad}: {e}");
        }
    }
}
