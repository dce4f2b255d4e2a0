//! The push (`push=URL`): every period (`chunk=`) the profile of the chunks flushed during it
//! is encoded on the processing thread — an OTLP profiles request (`hpm_profile::otlp`), or
//! for Pyroscope the period's JFR (its chunks encoded again, concatenated: a JFR file is a
//! sequence of chunks) — and offered to the session's `hpm_push::Pusher`, which delivers it
//! from its own thread. Offering never waits on the network; what the pusher could not
//! deliver is counted as the session's drops (`DropClass::NotPushed`). A period's count is
//! its samples and its JVM events (allocations, lock waits), one each: a session sampling no
//! CPU event (`event=alloc`) pushes its events, and what it loses counts them.
//!
//! [`Push`] is the session's half (started with the session, so a pusher that cannot start
//! refuses it; read by `status`); [`PushSink`] the processor's.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use hpm_profile::jfr::TableKeys;
use hpm_profile::model::{DropReason, EventInfo, PeriodUnit, Sample};
use hpm_profile::otlp::encode::UNKNOWN_SERVICE;
use hpm_profile::otlp::{PeriodBuilder, Resource};
use hpm_push::{Config, Format, Period, Pusher, Status, Target, ThreadHook};
use prost::Message;

use super::{Chunk, ProfileSink};
use crate::options::PushOptions;
use crate::os::thread_cpu_ns;
use crate::processor::{Inputs, Written};
use crate::threads::Threads;

/// At the session's end the pusher has this long to deliver what is queued (a request still
/// under way then is counted undelivered): a JVM pushing to a backend that is down or never
/// answers exits at most this much later.
pub const STOP_GRACE: Duration = Duration::from_secs(2);

/// A period ends early when what it holds passes this (half the pusher's default queue, 32
/// MiB: a period larger than the queue could never be queued).
pub const MAX_PERIOD_BYTES: usize = 16 << 20;

/// The session's push: its target, who it is (the resource), and the pusher.
pub struct Push {
    target: Target,
    chunk_ns: u64,
    resource: Resource,
    state: Mutex<State>,
}

enum State {
    Running(Pusher),
    /// `stop` is waiting for the pusher's grace.
    Stopping,
    Stopped(Status),
}

/// Samples per second of a clock event (Pyroscope's `sampleRate`), 0 for a counting one.
fn sample_rate_hz(event: &EventInfo) -> u32 {
    match event.unit {
        PeriodUnit::Nanoseconds if event.period > 0 => (1_000_000_000 / event.period).min(u64::from(u32::MAX)) as u32,
        _ => 0,
    }
}

/// The name the pusher sends as: the service's; for Pyroscope, a name found (the option's is
/// checked when parsed) with the characters Pyroscope refuses made `_`, said in one line.
fn app_name(format: Format, service: &str) -> String {
    if format != Format::Pyroscope || hpm_push::pyroscope_app_ok(service) {
        return service.to_string();
    }
    let name = hpm_push::pyroscope_app_name(service);
    eprintln!(
        "hpm: push: the service {:?} is sent to Pyroscope as {name:?} (letters, digits and . _ - / : only); \
         service=NAME sets another",
        service
    );
    name
}

impl Push {
    /// Starts the pusher's thread for `opts`, sending as `resource`; `event` is the session's
    /// sampling event (Pyroscope is told its rate when it is a clock). With `threads`, the push
    /// thread is one of the agent's own, never profiled.
    pub fn start(
        opts: &PushOptions,
        resource: Resource,
        event: &EventInfo,
        threads: Option<&'static Threads>,
    ) -> Result<Push, String> {
        let mut cfg = Config::new(opts.target.clone(), app_name(opts.target.format, &resource.service));
        cfg.labels = opts.labels.clone();
        cfg.sample_rate_hz = sample_rate_hz(event);
        cfg.on_thread = threads.map(|threads| {
            ThreadHook(Arc::new(move |started| {
                let tid = crate::os::gettid();
                if started {
                    threads.exclude(tid)
                } else {
                    threads.include(tid)
                }
            }))
        });
        let pusher = Pusher::start(cfg).map_err(|e| match e.kind() {
            // A name Pyroscope cannot take (perhaps from the environment): which, why, and how.
            std::io::ErrorKind::InvalidInput => format!("push={}: {e} (service=NAME sets it)", opts.target.display()),
            _ => format!("push={}: cannot start its thread: {e}", opts.target.display()),
        })?;
        Ok(Push {
            target: opts.target.clone(),
            chunk_ns: opts.chunk_secs * 1_000_000_000,
            resource,
            state: Mutex::new(State::Running(pusher)),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `status`'s line: the last push's result and the totals.
    pub fn status_line(&self) -> String {
        match &*self.state() {
            State::Running(p) => p.status().status_line(&self.target),
            State::Stopping => format!("stopping (delivering what is queued to {})", self.target.display()),
            State::Stopped(s) => s.status_line(&self.target),
        }
    }

    fn offer(&self, p: Period) {
        if let State::Running(pusher) = &*self.state() {
            pusher.offer(p);
        }
    }

    fn status(&self) -> Option<Status> {
        match &*self.state() {
            State::Running(p) => Some(p.status()),
            State::Stopping => None,
            State::Stopped(s) => Some(s.clone()),
        }
    }

    /// Stops the pusher after at most `grace` (plus the request under way); its last status.
    fn stop(&self, grace: Duration) -> Option<Status> {
        let running = {
            let mut state = self.state();
            match std::mem::replace(&mut *state, State::Stopping) {
                State::Running(p) => Some(p),
                other => {
                    *state = other;
                    None
                }
            }
        };
        let Some(pusher) = running else { return self.status() };
        // Outside the lock: `status` meanwhile says "stopping".
        let status = pusher.stop(grace);
        *self.state() = State::Stopped(status.clone());
        Some(status)
    }
}

impl Drop for Push {
    /// A session that failed to start after its push did: the pusher's thread ends too.
    fn drop(&mut self) {
        self.stop(Duration::ZERO);
    }
}

/// Who pushes: `service=`, else `$OTEL_SERVICE_NAME` (`env`, read when the agent was set up),
/// else the main class or jar of `sun.java.command`, else [`UNKNOWN_SERVICE`]; the host; the
/// JVM from its system properties (read through JVMTI at session start). Unknown values are
/// left out.
pub fn resource(jvmti: &crate::jvmti::Jvmti, service_option: Option<&str>, env: Option<&str>) -> Resource {
    let prop = |name: &str| jvmti.system_property(name).ok().map(|v| printable(&v)).filter(|v| !v.is_empty());
    let command = prop("sun.java.command");
    let description = match (prop("java.vm.name"), prop("java.vm.version")) {
        (Some(n), Some(v)) => Some(format!("{n} {v}")),
        (n, v) => n.or(v),
    };
    Resource {
        service: service_name(service_option, env, command.as_deref()),
        host: crate::os::hostname().map(|h| printable(&h)),
        pid: std::process::id(),
        runtime_name: prop("java.runtime.name"),
        runtime_version: prop("java.runtime.version"),
        runtime_description: description,
    }
}

/// Longest text taken from the environment or the JVM for the resource.
const MAX_IDENTITY_LEN: usize = 256;

/// `s` without control characters, cut at [`MAX_IDENTITY_LEN`] characters.
fn printable(s: &str) -> String {
    s.chars().filter(|c| !c.is_control()).take(MAX_IDENTITY_LEN).collect::<String>().trim().to_string()
}

/// The service's name (see [`resource`]): `command` is `sun.java.command` (main class or jar,
/// then the program's arguments).
fn service_name(option: Option<&str>, env: Option<&str>, command: Option<&str>) -> String {
    let env = env.map(printable).filter(|e| !e.is_empty());
    option
        .map(str::to_string)
        .or(env)
        .or_else(|| command.and_then(|c| command_name(c, |p| std::path::Path::new(p).is_file())))
        .map(|s| printable(&s))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| UNKNOWN_SERVICE.to_string())
}

/// The main class, or the jar's file name without `.jar`, of `sun.java.command`. The launcher
/// writes the jar's path as given, spaces included, then the arguments: the path runs to the
/// first `.jar` followed by a space or the end when the first word is not a class name (a path
/// has `/`), or when that path is a file (`is_file`: a relative `My App.jar`).
fn command_name(command: &str, is_file: impl Fn(&str) -> bool) -> Option<String> {
    let command = command.trim();
    let first = command.split_whitespace().next()?;
    let class_name = first.bytes().all(|b| b.is_ascii_alphanumeric() || b"._$".contains(&b));
    let jar = match first.strip_suffix(".jar") {
        Some(_) => Some(first),
        None => command
            .match_indices(".jar")
            .map(|(i, _)| &command[..i + 4])
            .find(|p| command[p.len()..].is_empty() || command[p.len()..].starts_with(' '))
            .filter(|p| !class_name || is_file(p)),
    };
    let name = match jar {
        Some(path) => path.strip_suffix(".jar").unwrap_or(path).rsplit('/').next().unwrap_or(path),
        None => first,
    };
    Some(name.to_string())
}

/// The period being made.
enum Held {
    Otlp {
        builder: Box<PeriodBuilder>,
        /// JVM events added (the builder counts the samples).
        events: u64,
    },
    /// Pyroscope: the period's JFR chunks, with the keys of its own chunks' strings.
    Jfr {
        bytes: Vec<u8>,
        keys: Box<TableKeys>,
        /// Samples and JVM events.
        count: u64,
    },
}

impl Held {
    /// Its samples and JVM events, one each: the period is sent when it holds any.
    fn count(&self) -> u64 {
        match self {
            Held::Otlp { builder, events } => builder.samples() + events,
            Held::Jfr { count, .. } => *count,
        }
    }

    fn bytes(&self) -> usize {
        match self {
            Held::Otlp { builder, .. } => builder.approx_bytes(),
            Held::Jfr { bytes, .. } => bytes.len(),
        }
    }

    /// Adds a chunk's samples and JVM events.
    fn add(&mut self, chunk: &Chunk<'_>) {
        let rec = chunk.rec;
        let events = rec.events.len() as u64;
        match self {
            Held::Otlp { builder, events: held } => {
                builder.add(rec, &rec.samples);
                *held += events;
            }
            Held::Jfr { bytes, keys, count } => {
                if rec.samples.is_empty() && rec.events.is_empty() {
                    return;
                }
                let data = hpm_profile::jfr::encode_chunk_keyed(rec, &rec.samples, chunk.marks, chunk.times, keys);
                bytes.extend_from_slice(&data);
                *count += rec.samples.iter().map(Sample::count).sum::<u64>() + events;
            }
        }
    }
}

/// The processor's half: adds each chunk to the period, and offers the period when it ends.
pub(in crate::processor) struct PushSink {
    push: Arc<Push>,
    held: Held,
    /// The period's start: ticks and wall clock (of its first chunk's start).
    began: Option<(u64, u64)>,
    /// The wall clock at the last chunk's end.
    last_end_wall: u64,
    periods: u64,
    /// CPU time of the processing thread spent adding chunks and encoding periods.
    encode_ns: u64,
    quiet: bool,
    /// The pusher was stopped: no period is made any more.
    ended: bool,
}

impl PushSink {
    /// The session's push sink, if it pushes.
    pub(in crate::processor) fn new(inputs: &Inputs) -> Option<PushSink> {
        let push = inputs.push.clone()?;
        let held = new_held(push.target.format, inputs.start_wall_ns);
        Some(PushSink {
            push,
            held,
            began: None,
            last_end_wall: inputs.start_wall_ns,
            periods: 0,
            encode_ns: 0,
            quiet: inputs.opts.quiet,
            ended: false,
        })
    }

    /// Ends the period at `end_wall_ns` and offers it (unless it has no sample nor event).
    fn end_period(&mut self, end_wall_ns: u64) {
        let Some((_, from)) = self.began.take() else { return };
        let t = thread_cpu_ns();
        let count = self.held.count();
        let held = std::mem::replace(&mut self.held, new_held(self.push.target.format, end_wall_ns));
        if count > 0 {
            let body = match held {
                Held::Otlp { mut builder, .. } => builder.finish(end_wall_ns, &self.push.resource).encode_to_vec(),
                Held::Jfr { bytes, .. } => bytes,
            };
            self.push.offer(Period { body, samples: count, from_unix_ns: from, until_unix_ns: end_wall_ns });
            self.periods += 1;
        }
        self.encode_ns += thread_cpu_ns().saturating_sub(t);
    }
}

fn new_held(format: Format, start_wall_ns: u64) -> Held {
    match format {
        Format::Otlp => Held::Otlp { builder: Box::new(PeriodBuilder::new(start_wall_ns)), events: 0 },
        Format::Pyroscope => Held::Jfr { bytes: Vec::new(), keys: Box::default(), count: 0 },
    }
}

impl ProfileSink for PushSink {
    fn flush(&mut self, chunk: &Chunk<'_>) {
        if self.ended {
            return;
        }
        let times = chunk.times;
        // Chunks follow one another: a period begins where the last one ended.
        let (start_ticks, _) = *self.began.get_or_insert((times.start_ticks, times.start_wall_ns));
        let t = thread_cpu_ns();
        self.held.add(chunk);
        self.encode_ns += thread_cpu_ns().saturating_sub(t);
        let end_wall = times.start_wall_ns + times.end_ticks.saturating_sub(times.start_ticks);
        self.last_end_wall = end_wall;
        if times.end_ticks.saturating_sub(start_ticks) >= self.push.chunk_ns || self.held.bytes() >= MAX_PERIOD_BYTES {
            self.end_period(end_wall);
        }
    }

    fn drops(&self, drops: &mut Vec<(DropReason, u64)>) {
        if let Some(s) = self.push.status() {
            drops.push((DropReason::PushQueueFull, s.dropped_full_samples));
            drops.push((DropReason::PushRefused, s.refused_samples));
            drops.push((DropReason::PushNotDelivered, s.undelivered_samples));
        }
    }

    /// The last, partial period is offered, then the pusher stopped within [`STOP_GRACE`]:
    /// what it did not deliver is final.
    fn end(&mut self) {
        if !self.ended {
            self.end_period(self.last_end_wall);
            self.push.stop(STOP_GRACE);
            self.ended = true;
        }
    }

    /// One line says what was pushed and what was not (the pusher stopped by [`Self::end`]).
    fn finish(&mut self, _written: &mut Written) {
        self.end();
        let Some(status) = self.push.stop(STOP_GRACE) else { return };
        let lost = status.dropped_full_periods + status.refused_periods + status.undelivered_periods;
        if !self.quiet || lost > 0 {
            let mut line = status.summary_line(&self.push.target);
            if self.periods > 0 {
                let each = self.encode_ns as f64 / self.periods as f64 / 1e6;
                line.push_str(&format!("; encoding {each:.1} ms of CPU per period"));
            }
            eprintln!("hpm: {line}");
        }
    }
}

/// The JFR the Pyroscope push sends for a period: its chunks, each encoded as the JFR sink
/// does, one after the other.
#[cfg(test)]
fn period_jfr(chunks: &[(&hpm_profile::model::Recording, hpm_profile::jfr::writer::ChunkTimes)]) -> Vec<u8> {
    let mut held = new_held(Format::Pyroscope, 0);
    for (rec, times) in chunks {
        held.add(&Chunk { rec, marks: &[], times: *times });
    }
    match held {
        Held::Jfr { bytes, .. } => bytes,
        Held::Otlp { .. } => unreachable!(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hpm_profile::jfr::writer::ChunkTimes;
    use hpm_profile::model::{Frame, FrameKind, JvmEvent, JvmEventKind, MethodInfo, Recording};

    #[test]
    fn the_service_is_the_option_the_environment_or_the_main_class() {
        let cmd = Some("com.example.Main --port 8080");
        assert_eq!(service_name(Some("orders"), Some("env"), cmd), "orders");
        assert_eq!(service_name(None, Some("billing"), cmd), "billing");
        assert_eq!(service_name(None, Some(""), cmd), "com.example.Main", "an empty variable is none");
        assert_eq!(service_name(None, None, cmd), "com.example.Main");
        assert_eq!(service_name(None, None, Some("/opt/app/lib/shop-1.2.jar arg")), "shop-1.2");
        assert_eq!(service_name(None, None, Some("shop.jar")), "shop");
        assert_eq!(service_name(None, None, Some("com.example.Main lib.jar")), "com.example.Main");
        assert_eq!(service_name(None, None, Some("  ")), UNKNOWN_SERVICE);
        assert_eq!(service_name(None, None, None), UNKNOWN_SERVICE);
        assert_eq!(service_name(None, Some("a\u{1b}[2Jb"), None), "a[2Jb", "no control characters");
        assert_eq!(service_name(None, Some(&"x".repeat(1000)), None).len(), MAX_IDENTITY_LEN);
    }

    /// A jar's path may hold spaces (`java -jar "/tmp/My App/spin.jar"`): its name is the
    /// file's, not the path's first word.
    #[test]
    fn a_jar_path_with_spaces_names_the_jar() {
        let none = |_: &str| false;
        let name = |c: &str| command_name(c, none);
        assert_eq!(name("/tmp/My App/spin.jar").as_deref(), Some("spin"));
        assert_eq!(name("/tmp/My App/spin.jar --port 1").as_deref(), Some("spin"));
        assert_eq!(name("/opt/a.jar.d/x y/app.jar").as_deref(), Some("app"), "a .jar inside a word");
        assert_eq!(name("/opt/app.jar other.jar").as_deref(), Some("app"));
        // A class name's arguments may name a jar: it stays the class.
        assert_eq!(name("com.example.Main in.jar").as_deref(), Some("com.example.Main"));
        assert_eq!(name("Main$Inner x").as_deref(), Some("Main$Inner"));
        // A relative path with a space: the file decides.
        assert_eq!(name("My App.jar").as_deref(), Some("My"));
        assert_eq!(command_name("My App.jar a", |p| p == "My App.jar").as_deref(), Some("My App"));
        assert_eq!(name("").as_deref(), None);
    }

    /// A name found in the environment or the JVM that Pyroscope would refuse is made one it
    /// takes (it once refused the session, so no profile was made at all); OTLP sends any.
    #[test]
    fn a_found_name_is_made_one_pyroscope_takes() {
        assert_eq!(app_name(Format::Pyroscope, "order service"), "order_service");
        assert_eq!(app_name(Format::Pyroscope, "Main$Inner"), "Main_Inner");
        assert_eq!(app_name(Format::Pyroscope, "shop"), "shop");
        assert_eq!(app_name(Format::Otlp, "order service"), "order service");
        let target = hpm_push::Target::parse("http://127.0.0.1:9", Format::Pyroscope).unwrap();
        let opts = PushOptions { target, chunk_secs: 1, service: None, labels: Vec::new() };
        let resource = Resource { service: "order service".into(), ..Resource::default() };
        let push = Push::start(&opts, resource, &EventInfo::default(), None).expect("the session pushes");
        push.stop(Duration::ZERO);
    }

    /// Stopped once, the push keeps its last status: stopping again (as dropping it does)
    /// returns it. Dropping a stopped push once hung the JVM's exit (its lock taken twice).
    #[test]
    fn a_push_stops_once_and_keeps_its_status() {
        let target = hpm_push::Target::parse("http://127.0.0.1:9", Format::Otlp).unwrap();
        let opts = PushOptions { target, chunk_secs: 1, service: None, labels: Vec::new() };
        let event = EventInfo::default();
        assert_eq!(sample_rate_hz(&event), 100);
        let push = Push::start(&opts, Resource::default(), &event, None).unwrap();
        let first = push.stop(Duration::ZERO).expect("stopped");
        let again = push.stop(Duration::ZERO).expect("the same status");
        assert_eq!(first.delivered_periods, again.delivered_periods);
        assert_eq!(push.status_line(), first.status_line(&opts.target));
        drop(push);
    }

    /// A chunk of `n` samples of one stack, from `start` s to `start + 1` s.
    fn chunk(rec: &mut Recording, start: u64, n: usize) -> ChunkTimes {
        let m = rec.methods.intern(MethodInfo::java("com/example/Hot", "spin", "()V"));
        let frame = Frame { method: m, bci: 3, line: 42, kind: FrameKind::JitCompiled };
        rec.samples.clear();
        for i in 0..n {
            let mut s = Sample::of_stack(Arc::from(vec![frame]));
            s.time = start * 1_000_000_000 + i as u64;
            s.weight = 10_000_000;
            rec.samples.push(s);
        }
        ChunkTimes {
            start_ticks: start * 1_000_000_000,
            end_ticks: (start + 1) * 1_000_000_000,
            start_wall_ns: rec.start_wall_ns + start * 1_000_000_000,
        }
    }

    /// A chunk of `n` allocation events and no sample (a session of `event=alloc`).
    fn alloc_chunk(rec: &mut Recording, n: usize) -> ChunkTimes {
        let times = chunk(rec, 0, 0);
        rec.event.sampler = hpm_profile::model::StackSampler::None;
        let m = rec.methods.intern(MethodInfo::java("com/example/Hot", "fill", "()V"));
        let stack: hpm_profile::model::Stack =
            Arc::from(vec![Frame { method: m, bci: 1, line: 7, kind: FrameKind::Interpreted }]);
        rec.events = (0..n)
            .map(|i| JvmEvent { time: i as u64, weight: 4096, ..JvmEvent::of(JvmEventKind::Allocation, stack.clone()) })
            .collect();
        times
    }

    /// A period of JVM events without a sample is sent and counts them: `event=alloc` once
    /// pushed nothing and said "0 samples".
    #[test]
    fn a_period_of_events_only_is_sent_with_its_count() {
        let mut rec = Recording { start_wall_ns: 1_700_000_000_000_000_000, ..Default::default() };
        let times = alloc_chunk(&mut rec, 4);
        let chunk = Chunk { rec: &rec, marks: &[], times };

        let mut otlp = new_held(Format::Otlp, rec.start_wall_ns);
        otlp.add(&chunk);
        assert_eq!(otlp.count(), 4);
        let Held::Otlp { mut builder, .. } = otlp else { unreachable!() };
        let req = builder.finish(rec.start_wall_ns + 1_000_000_000, &Resource::default());
        let dict = req.dictionary.unwrap_or_default();
        let profiles = &req.resource_profiles[0].scope_profiles[0].profiles;
        let types: Vec<&str> = profiles
            .iter()
            .filter_map(|p| dict.string_table.get(p.sample_type.as_ref()?.type_strindex as usize).map(String::as_str))
            .collect();
        assert_eq!(types, ["alloc"]);
        assert_eq!(profiles[0].samples.len(), 4);

        let mut jfr = new_held(Format::Pyroscope, rec.start_wall_ns);
        jfr.add(&chunk);
        assert_eq!(jfr.count(), 4);
        let bytes = period_jfr(&[(&rec, times)]);
        let back = hpm_profile::jfr::recording_from_bytes(&bytes, "period.jfr").expect("a JFR file");
        assert_eq!(back.events.len(), 4);
        assert!(back.samples.is_empty());
    }

    /// Pyroscope's period is its chunks one after the other: a JFR file any reader takes, with
    /// every chunk's samples.
    #[test]
    fn a_period_of_chunks_is_one_jfr_file() {
        let mut a = Recording { start_wall_ns: 1_700_000_000_000_000_000, ..Default::default() };
        let ta = chunk(&mut a, 0, 3);
        let mut b = a.clone();
        // The method table grew between the chunks.
        b.methods.intern(MethodInfo::java("com/example/Cold", "wait", "()V"));
        let tb = chunk(&mut b, 1, 5);
        let bytes = period_jfr(&[(&a, ta), (&b, tb)]);
        let back = hpm_profile::jfr::recording_from_bytes(&bytes, "period.jfr").expect("a JFR file");
        assert_eq!(back.samples.len(), 8);
        let names: Vec<String> = back.samples.iter().map(|s| back.method(s.stack[0].method).display_name()).collect();
        assert!(names.iter().all(|n| n == "com.example.Hot.spin"), "{names:?}");
    }
}
