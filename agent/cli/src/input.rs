//! Loading the profiles the reading commands take, with the loaders' warnings on stderr.

use std::path::Path;

use hpm_profile::cct::Cct;
use hpm_profile::filter::SampleFilter;

/// A loaded profile: metadata when the source has any, the tree, and component counts.
pub(crate) type Input = hpm_profile::load::Profile;

/// `--thread`, `--from`, `--to`: the samples a reading command looks at (hpm_profile::filter).
#[derive(clap::Args, Clone, Debug, Default)]
pub(crate) struct SampleArgs {
    /// Only samples of threads whose name matches REGEX, e.g. 'worker-[0-9]+' or '^main$'
    /// (.jfr only)
    #[arg(long, value_name = "REGEX")]
    thread: Option<String>,
    /// Virtual threads' samples (JDK 21+): fold (one row `virtual threads (N)`), each (a row
    /// per virtual thread) or carrier (charged to the platform thread that ran them) (.jfr only)
    #[arg(long, value_name = "HOW", default_value = "fold", value_parser = hpm_profile::vthreads::Grouping::parse)]
    vthreads: hpm_profile::vthreads::Grouping,
    /// Only samples from TIME on: from the recording's start (2.5s, 1500ms, 2m) or ISO 8601
    /// with a zone (2024-05-01T12:00:02.5Z) (.jfr only)
    #[arg(long, value_name = "TIME")]
    from: Option<String>,
    /// Only samples before TIME, given as for --from (.jfr only)
    #[arg(long, value_name = "TIME")]
    to: Option<String>,
    /// The JVM's events instead of the CPU samples, weighted by bytes or time waited (agent
    /// options `alloc`, `lock`; JFR's own events too): alloc, lock (monitor enters and parks),
    /// monitor, park or pinned (virtual threads parked on their carriers) (.jfr only)
    #[arg(long, value_name = "KIND", value_parser = hpm_profile::output::jvmevents::EventSel::parse, display_order = 0)]
    pub(crate) event: Option<hpm_profile::output::jvmevents::EventSel>,
    /// Leave out the parks of idle pool threads waiting for work (ThreadPoolExecutor.getTask,
    /// ForkJoinPool.awaitWork, Jetty's idle threads), which by default are summed in a row of
    /// their own, `(idle: waiting for work)` (.jfr only)
    #[arg(long)]
    no_idle: bool,
    /// Only the lock waits on monitors or park blockers whose class matches REGEX, e.g.
    /// 'PriceCache' or 'ReentrantLock' (allocations stay) (.jfr only)
    #[arg(long, value_name = "REGEX")]
    lock_class: Option<String>,
    /// Only the profiles of service NAME (its `service.name`), merged: the JVMs of a fleet as
    /// an OpenTelemetry Collector's file exporter wrote them (OTLP input only)
    #[arg(long, value_name = "NAME")]
    pub(crate) service: Option<String>,
    /// Only the profiles of host NAME (its `host.name`) (OTLP input only)
    #[arg(long, value_name = "NAME")]
    pub(crate) host: Option<String>,
}

impl SampleArgs {
    pub(crate) fn filter(&self) -> Result<SampleFilter, String> {
        let mut f = SampleFilter::new(self.thread.as_deref(), self.from.as_deref(), self.to.as_deref())?
            .with_lock_class(self.lock_class.as_deref())?;
        f.no_idle = self.no_idle;
        f.vthreads = self.vthreads;
        f.fleet = hpm_profile::otlp::Selection { service: self.service.clone(), host: self.host.clone() };
        Ok(f)
    }
}

/// Loads `.jfr`, OTLP profiles (a file or a directory of them) or collapsed stacks. With `threads`, the tree gets a `[name tid=N]` level
/// under the root (JFR only: collapsed stacks carry no thread information). With `from_phase`
/// (`NAME` or `NAME=INDEX`, the Java bridge's `hpm.Phase` events; `.jfr` only), only the
/// samples from that marker on; of those, what `samples` selects. Warnings (an incomplete
/// last chunk, the samples left out) go to stderr.
pub(crate) fn load_input(
    path: &str,
    threads: bool,
    from_phase: Option<&str>,
    samples: &SampleArgs,
    data_root: Option<hpm_profile::output::data::DataBy>,
    keep_samples: bool,
) -> Result<Input, String> {
    let filter = samples.filter()?;
    let input =
        hpm_profile::load::load_profile(path, threads, from_phase, &filter, data_root, samples.event, keep_samples)?;
    warn(&input.notes);
    Ok(input)
}

/// Prints the loaders' warnings, one line each.
pub(crate) fn warn(notes: &[String]) {
    for n in notes {
        eprintln!("hpm: {}", hpm_profile::text::terminal_safe(n));
    }
}

/// Loads a profile as a calling context tree, refusing empty ones.
pub(crate) fn load_profile(path: &str) -> Result<Cct, String> {
    let p = Path::new(path);
    let (cct, notes) = hpm_profile::load::load_cct(p).map_err(|e| e.to_string())?;
    warn(&notes);
    if cct.total_samples() == 0 {
        return Err(format!("{path}: the profile has no samples"));
    }
    Ok(cct)
}
