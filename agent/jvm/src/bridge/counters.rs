//! Counters of the calling thread for the Java bridge (the Jikes RVM "HPM API" of Georges et
//! al.): a counting set opened on the thread's first request and closed when it ends. The set
//! is [`REGION_COUNTERS`]: the hardware ones are left out (and reported) without a PMU.

use std::cell::RefCell;

use crate::options;
use hpm_profile::jfr::marks::REGION_COUNTERS;

use crate::perf::Counting;

struct ThreadCounters {
    counting: Counting,
    /// Counters that could not be opened, with why.
    missing: Vec<String>,
}

thread_local! {
    static COUNTERS: RefCell<Option<ThreadCounters>> = const { RefCell::new(None) };
}

fn with<T>(f: impl FnOnce(&ThreadCounters) -> T) -> T {
    COUNTERS.with(|c| {
        let mut c = c.borrow_mut();
        let tc = c.get_or_insert_with(|| {
            let events: Vec<_> = REGION_COUNTERS.iter().filter_map(|(n, _)| options::parse_event(n).ok()).collect();
            let (counting, failed) = Counting::open(&events);
            let missing = failed
                .into_iter()
                .map(|(ev, e)| {
                    if e.is_unsupported() {
                        let os = std::io::Error::from_raw_os_error(e.errno);
                        format!("{}: not available on this machine (no hardware PMU: {os})", ev.name)
                    } else {
                        format!("{}: {e}", ev.name)
                    }
                })
                .collect();
            ThreadCounters { counting, missing }
        });
        f(tc)
    })
}

/// Names of the counters this thread reads, in reading order.
pub fn names() -> Vec<String> {
    with(|c| c.counting.names().iter().map(|s| s.to_string()).collect())
}

/// Counters left out, one "name: reason" line each.
pub fn missing() -> Vec<String> {
    with(|c| c.missing.clone())
}

/// `[ticks, value...]`: the clock (CLOCK_MONOTONIC ns, the recording's) then each counter.
pub fn read() -> Result<Vec<i64>, String> {
    with(|c| {
        let mut v = Vec::with_capacity(8);
        v.push(crate::os::now_ticks());
        c.counting.read(&mut v).map_err(|e| format!("{e}"))?;
        Ok(v.into_iter().map(|x| x as i64).collect())
    })
}
