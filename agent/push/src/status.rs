//! What the pusher did so far, and its one-line renderings for the exit summary and `status`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::Target;

/// The last attempt's outcome: `HTTP 200 in 12 ms`, `connection refused`, `timed out after 5 s`,
/// `HTTP 400: <the start of the answer's body, printable only>`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub at_unix_ns: u64,
    pub ok: bool,
    pub what: String,
}

/// What the pusher did so far. Samples are the callers' counts from [`crate::Period::samples`];
/// delivered bytes are bytes sent on the wire (the gzipped body for OTLP).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Status {
    pub delivered_periods: u64,
    pub delivered_samples: u64,
    pub delivered_bytes: u64,
    /// Held now: queued and being sent.
    pub queued_periods: u64,
    pub queued_bytes: u64,
    /// Pushed out of a full queue, oldest first, while the backend did not take them.
    pub dropped_full_periods: u64,
    pub dropped_full_samples: u64,
    /// Answered by a 4xx other than 408 and 429: not retried.
    pub refused_periods: u64,
    pub refused_samples: u64,
    /// Still held when the pusher stopped.
    pub undelivered_periods: u64,
    pub undelivered_samples: u64,
    pub attempts: u64,
    pub last: Option<Outcome>,
}

impl Status {
    /// The exit summary, one line without a prefix: `push to URL: 12 periods delivered (3,456
    /// samples, 1.2 MiB)`, then what was not delivered and why, and the last failure.
    pub fn summary_line(&self, target: &Target) -> String {
        let offered = self.delivered_periods + self.lost_periods();
        let mut s = if offered == self.delivered_periods {
            format!("push to {}: {} delivered", target.display(), periods(self.delivered_periods))
        } else {
            format!("push to {}: {} of {} delivered", target.display(), self.delivered_periods, periods(offered))
        };
        s += &format!(" ({}, {})", samples(self.delivered_samples), bytes(self.delivered_bytes));
        let mut lost = Vec::new();
        if self.dropped_full_periods > 0 {
            lost.push(format!(
                "{} ({}) dropped from the full queue while the backend failed",
                periods(self.dropped_full_periods),
                samples(self.dropped_full_samples)
            ));
        }
        if self.refused_periods > 0 {
            lost.push(format!(
                "{} ({}) refused by the backend",
                periods(self.refused_periods),
                samples(self.refused_samples)
            ));
        }
        if self.undelivered_periods > 0 {
            lost.push(format!(
                "{} ({}) still queued at exit",
                periods(self.undelivered_periods),
                samples(self.undelivered_samples)
            ));
        }
        if !lost.is_empty() {
            s += &format!("; not delivered: {}", lost.join(", "));
        }
        if let Some(last) = self.last.as_ref().filter(|l| !l.ok) {
            s += &format!("; last attempt: {}", last.what);
        }
        s
    }

    /// For `status`: counts so far and the last outcome with its age.
    pub fn status_line(&self, target: &Target) -> String {
        self.status_line_at(target, unix_now_ns())
    }

    fn status_line_at(&self, target: &Target, now_unix_ns: u64) -> String {
        let mut s = format!(
            "push to {}: {} delivered, {} queued ({}), {} dropped, {} refused, {} attempts",
            target.display(),
            self.delivered_periods,
            self.queued_periods,
            bytes(self.queued_bytes),
            self.dropped_full_periods,
            self.refused_periods,
            self.attempts
        );
        match &self.last {
            Some(last) => {
                let age = Duration::from_nanos(now_unix_ns.saturating_sub(last.at_unix_ns));
                s += &format!("; last: {}, {} ago", last.what, duration(age));
            }
            None => s += "; nothing sent yet",
        }
        s
    }

    fn lost_periods(&self) -> u64 {
        self.dropped_full_periods + self.refused_periods + self.undelivered_periods
    }
}

/// The wall clock in nanoseconds since 1970.
pub(crate) fn unix_now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

fn periods(n: u64) -> String {
    plural(n, "period")
}

fn samples(n: u64) -> String {
    plural(n, "sample")
}

fn plural(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// `512 B`, `12.5 KiB`, `950.7 MiB` (as hpm's reports write sizes).
pub(crate) fn bytes(n: u64) -> String {
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = "KiB";
    for next in ["MiB", "GiB", "TiB"] {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = next;
    }
    format!("{v:.1} {unit}")
}

/// `12 ms`, `2.5 s`, `10 s`, `3 min`.
pub(crate) fn duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 10_000 && !ms.is_multiple_of(1000) {
        format!("{:.1} s", d.as_secs_f64())
    } else if ms < 180_000 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} min", d.as_secs() / 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Format;

    fn target() -> Target {
        Target::parse("http://127.0.0.1:4318", Format::Otlp).unwrap()
    }

    #[test]
    fn summary_when_everything_was_delivered() {
        let s = Status {
            delivered_periods: 12,
            delivered_samples: 3456,
            delivered_bytes: 1_300_000,
            attempts: 12,
            last: Some(Outcome { at_unix_ns: 1, ok: true, what: "HTTP 200 in 12 ms".into() }),
            ..Status::default()
        };
        assert_eq!(
            s.summary_line(&target()),
            "push to http://127.0.0.1:4318/v1development/profiles: 12 periods delivered (3456 samples, 1.2 MiB)"
        );
    }

    #[test]
    fn summary_says_what_was_not_delivered_and_why() {
        let s = Status {
            delivered_periods: 1,
            delivered_samples: 10,
            delivered_bytes: 100,
            dropped_full_periods: 2,
            dropped_full_samples: 20,
            refused_periods: 1,
            refused_samples: 1,
            undelivered_periods: 1,
            undelivered_samples: 7,
            attempts: 9,
            last: Some(Outcome { at_unix_ns: 1, ok: false, what: "connection refused".into() }),
            ..Status::default()
        };
        assert_eq!(
            s.summary_line(&target()),
            "push to http://127.0.0.1:4318/v1development/profiles: 1 of 5 periods delivered (10 samples, 100 B); \
             not delivered: 2 periods (20 samples) dropped from the full queue while the backend failed, \
             1 period (1 sample) refused by the backend, 1 period (7 samples) still queued at exit; \
             last attempt: connection refused"
        );
    }

    #[test]
    fn status_line_tells_the_last_outcome_and_its_age() {
        let mut s = Status { queued_periods: 2, queued_bytes: 2048, attempts: 3, ..Status::default() };
        let t = target();
        assert!(s
            .status_line_at(&t, 5)
            .ends_with("2 queued (2.0 KiB), 0 dropped, 0 refused, 3 attempts; nothing sent yet"));
        s.last = Some(Outcome { at_unix_ns: 1_000_000_000, ok: true, what: "HTTP 200 in 12 ms".into() });
        let line = s.status_line_at(&t, 4_000_000_000);
        assert!(line.ends_with("; last: HTTP 200 in 12 ms, 3 s ago"), "{line}");
        assert!(s.status_line(&t).contains("last: HTTP 200 in 12 ms"));
    }

    #[test]
    fn durations_and_sizes() {
        let cases =
            [(12, "12 ms"), (300, "300 ms"), (2500, "2.5 s"), (5000, "5 s"), (60_000, "60 s"), (600_000, "10 min")];
        for (ms, want) in cases {
            assert_eq!(duration(Duration::from_millis(ms)), want);
        }
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(12_800), "12.5 KiB");
        assert_eq!(bytes(5 << 30), "5.0 GiB");
    }
}
