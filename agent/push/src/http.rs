//! One attempt: a period's request in the target's format, sent with ureq within the bounds, and
//! what the answer means for the period.

use std::io::{self, Read, Write};
use std::time::Instant;

use flate2::write::GzEncoder;
use flate2::Compression;
use ureq::Agent;

use crate::backoff::Rng;
use crate::status::duration;
use crate::{Config, Format, Period, NAME_MAX, RESPONSE_MAX};

/// At most this many bytes of an answer's headers.
const HEADERS_MAX: usize = 16 << 10;

/// At most this many bytes of an answer's body are shown in an outcome.
const SHOWN_MAX: usize = 200;

/// A period's request, ready to send.
#[derive(Debug)]
pub(crate) struct Request {
    /// Encoded, without the `?`; empty for OTLP.
    pub query: String,
    pub content_type: String,
    pub gzip: bool,
    pub body: Vec<u8>,
}

/// What an attempt means for its period.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Delivered,
    /// Keep it and try again; the peer's `Retry-After` seconds, if given.
    Retry(Option<u64>),
    /// Not retried: the body is wrong for that backend.
    Refused,
}

#[derive(Debug)]
pub(crate) struct Attempt {
    pub verdict: Verdict,
    pub what: String,
}

/// The client: no proxy from the environment, no redirects followed, no idle connections kept
/// (one request a period), every attempt bounded by `io_timeout`.
pub(crate) fn agent(cfg: &Config) -> Agent {
    Agent::config_builder()
        .http_status_as_error(false)
        .proxy(None)
        .max_redirects(0)
        .user_agent(concat!("hpm/", env!("CARGO_PKG_VERSION")))
        .timeout_connect(Some(cfg.connect_timeout.min(cfg.io_timeout)))
        .timeout_global(Some(cfg.io_timeout))
        .max_response_header_size(HEADERS_MAX)
        .max_idle_connections(0)
        .max_idle_connections_per_host(0)
        .build()
        .into()
}

/// The request for `p`: OTLP's protobuf gzipped, or Pyroscope's multipart form with the JFR.
/// `name` is Pyroscope's `name=` value (from [`pyroscope_name`]).
pub(crate) fn request(cfg: &Config, name: &str, p: &Period, rng: &mut Rng) -> io::Result<Request> {
    match cfg.target.format {
        Format::Otlp => {
            let mut gz = GzEncoder::new(Vec::with_capacity(p.body.len() / 4 + 64), Compression::default());
            gz.write_all(&p.body)?;
            let body = gz.finish()?;
            Ok(Request { query: String::new(), content_type: "application/x-protobuf".into(), gzip: true, body })
        }
        Format::Pyroscope => {
            let (boundary, body) = multipart_jfr(&p.body, rng);
            let mut query = format!(
                "name={}&from={}&until={}&format=jfr&spyName=hpm",
                encode(name),
                p.from_unix_ns / 1_000_000_000,
                p.until_unix_ns.div_ceil(1_000_000_000)
            );
            if cfg.sample_rate_hz > 0 {
                query += &format!("&sampleRate={}", cfg.sample_rate_hz);
            }
            Ok(Request { query, content_type: format!("multipart/form-data; boundary={boundary}"), gzip: false, body })
        }
    }
}

/// A character Pyroscope takes in an application name: a letter, a digit or `. _ - / :`.
fn app_char_ok(c: char) -> bool {
    c.is_ascii_alphanumeric() || "._-/:".contains(c)
}

/// Whether Pyroscope takes `app` as an application name as it is.
pub fn pyroscope_app_ok(app: &str) -> bool {
    !app.is_empty() && app.chars().all(app_char_ok)
}

/// `app` as Pyroscope takes it: each character it would refuse becomes `_` (`order service`
/// -> `order_service`; an empty name is `_`). For names found rather than given: the
/// environment's and the JVM's.
pub fn pyroscope_app_name(app: &str) -> String {
    match app.chars().map(|c| if app_char_ok(c) { c } else { '_' }).collect::<String>() {
        s if s.is_empty() => "_".into(),
        s => s,
    }
}

/// Pyroscope's series name: `app{k=v,k2=v2}` (or `app` without labels), checked so the server
/// parses it back as given.
pub(crate) fn pyroscope_name(app: &str, labels: &[(String, String)]) -> Result<String, String> {
    if !pyroscope_app_ok(app) {
        return Err(format!(
            "the Pyroscope application name {app:?} must be letters, digits and . _ - / : only; set a name that is"
        ));
    }
    let mut out = app.to_string();
    for (i, (k, v)) in labels.iter().enumerate() {
        let key_ok = k.bytes().next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.');
        if !key_ok {
            return Err(format!("the Pyroscope label name {k:?} must be letters, digits, _ and . only"));
        }
        if v.is_empty() || v.chars().any(|c| c.is_control() || "{},=\"".contains(c)) {
            return Err(format!(
                "the Pyroscope label {k}={v:?} needs a value without {{ }} , = \" or control characters"
            ));
        }
        out += if i == 0 { "{" } else { "," };
        out += &format!("{k}={v}");
    }
    if !labels.is_empty() {
        out += "}";
    }
    if out.len() > NAME_MAX {
        return Err(format!(
            "the Pyroscope application name with its labels is {} bytes; at most {NAME_MAX} are accepted",
            out.len()
        ));
    }
    Ok(out)
}

/// A multipart form with one file part, `jfr`, and a boundary that does not occur in it.
fn multipart_jfr(jfr: &[u8], rng: &mut Rng) -> (String, Vec<u8>) {
    let mut boundary = String::new();
    // 128 random bits: a clash with the JFR's bytes is unlikely; 8 tries make it impossible
    // in practice, and the last is used regardless (the server then reads a short part).
    for _ in 0..8 {
        boundary = format!("hpm-{:016x}{:016x}", rng.next(), rng.next());
        if !jfr.windows(boundary.len()).any(|w| w == boundary.as_bytes()) {
            break;
        }
    }
    let mut body = Vec::with_capacity(jfr.len() + 256);
    body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
    body.extend_from_slice(b"Content-Disposition: form-data; name=\"jfr\"; filename=\"jfr\"\r\n");
    body.extend_from_slice(b"Content-Type: application/octet-stream\r\n\r\n");
    body.extend_from_slice(jfr);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (boundary, body)
}

/// Percent-encodes all but RFC 3986's unreserved characters.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out += &format!("%{b:02X}");
        }
    }
    out
}

/// POSTs `req` to `url` and tells what the answer means.
pub(crate) fn send(agent: &Agent, cfg: &Config, url: &str, req: &Request) -> Attempt {
    let started = Instant::now();
    let mut post = agent.post(url).header("Content-Type", &req.content_type);
    if req.gzip {
        post = post.header("Content-Encoding", "gzip");
    }
    let mut resp = match post.send(&req.body[..]) {
        Ok(resp) => resp,
        Err(e) => return Attempt { verdict: Verdict::Retry(None), what: failure(&e, cfg) },
    };
    let code = resp.status().as_u16();
    let retry_after = resp.headers().get("retry-after").and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok());
    let location = resp.headers().get("location").map(|v| printable(&v.as_bytes()[..v.len().min(SHOWN_MAX)]));
    // Read whatever the peer sends within RESPONSE_MAX and the attempt's timeout; an error while
    // reading leaves what was read.
    let mut answer = Vec::new();
    let _ = resp.body_mut().as_reader().take(RESPONSE_MAX as u64).read_to_end(&mut answer);
    let took = duration(started.elapsed());
    match code {
        200..=299 => Attempt { verdict: Verdict::Delivered, what: format!("HTTP {code} in {took}") },
        408 | 429 | 500..=599 => Attempt { verdict: Verdict::Retry(retry_after), what: with_body(code, &answer) },
        400..=499 => Attempt { verdict: Verdict::Refused, what: with_body(code, &answer) },
        300..=399 => Attempt { verdict: Verdict::Retry(retry_after), what: redirect(code, location.as_deref()) },
        _ => Attempt { verdict: Verdict::Retry(retry_after), what: with_body(code, &answer) },
    }
}

/// `HTTP 400: <first bytes of the answer, printable only>`.
fn with_body(code: u16, answer: &[u8]) -> String {
    let shown = printable(&answer[..answer.len().min(SHOWN_MAX)]);
    if shown.is_empty() {
        format!("HTTP {code}")
    } else {
        format!("HTTP {code}: {shown}")
    }
}

/// `HTTP 301 to URL: redirects are not followed; give push= that URL`: what to do, as the
/// pusher keeps retrying the URL given.
fn redirect(code: u16, location: Option<&str>) -> String {
    match location.filter(|l| !l.is_empty()) {
        Some(to) => format!("HTTP {code} to {to}: redirects are not followed; give push= that URL"),
        None => format!("HTTP {code}: redirects are not followed; give push= the backend's URL"),
    }
}

/// Printable ASCII with runs of anything else collapsed to one space, trimmed.
fn printable(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len());
    for &c in b {
        if (0x21..0x7f).contains(&c) {
            out.push(c as char);
        } else if !out.ends_with(' ') {
            out.push(' ');
        }
    }
    out.trim().to_string()
}

/// What went wrong before an answer, in a few words.
fn failure(e: &ureq::Error, cfg: &Config) -> String {
    use ureq::Timeout;
    match e {
        ureq::Error::Timeout(Timeout::Connect) => {
            format!("connecting timed out after {}", duration(cfg.connect_timeout.min(cfg.io_timeout)))
        }
        ureq::Error::Timeout(Timeout::Resolve) => "resolving the host timed out".into(),
        ureq::Error::Timeout(_) => format!("timed out after {}", duration(cfg.io_timeout)),
        ureq::Error::HostNotFound => "host not found".into(),
        ureq::Error::LargeResponseHeader(..) => {
            format!("the answer's headers passed {} KiB; is push= an OTLP or Pyroscope backend?", HEADERS_MAX >> 10)
        }
        ureq::Error::Io(io) => match io.kind() {
            io::ErrorKind::ConnectionRefused => "connection refused".into(),
            io::ErrorKind::ConnectionReset => "connection reset by the peer".into(),
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => {
                format!("timed out after {}", duration(cfg.io_timeout))
            }
            _ => format!("{io}"),
        },
        other => format!("{other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Target;

    fn labels(l: &[(&str, &str)]) -> Vec<(String, String)> {
        l.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn pyroscope_names() {
        assert_eq!(pyroscope_name("shop", &[]).unwrap(), "shop");
        assert_eq!(
            pyroscope_name("shop.cart", &labels(&[("env", "prod"), ("region", "eu 1")])).unwrap(),
            "shop.cart{env=prod,region=eu 1}"
        );
        for (app, l, why) in [
            ("", vec![], "application name"),
            ("a b", vec![], "application name"),
            ("a", labels(&[("1x", "v")]), "label name"),
            ("a", labels(&[("k", "a,b")]), "needs a value"),
            ("a", labels(&[("k", "")]), "needs a value"),
            ("a", labels(&[("k", &"v".repeat(NAME_MAX))]), "at most 1024"),
        ] {
            let e = pyroscope_name(app, &l).expect_err(app);
            assert!(e.contains(why), "{e}");
        }
    }

    /// A name found in the environment or the JVM is made one Pyroscope takes.
    #[test]
    fn pyroscope_app_names_are_made_acceptable() {
        for (found, sent) in [
            ("order service", "order_service"),
            ("Main$Inner", "Main_Inner"),
            ("a;b{c}", "a_b_c_"),
            ("café", "caf_"),
            ("", "_"),
            ("shop-1.2/x:y_z", "shop-1.2/x:y_z"),
        ] {
            assert_eq!(pyroscope_app_name(found), sent);
            assert!(pyroscope_app_ok(sent) && pyroscope_name(sent, &[]).is_ok(), "{sent}");
            assert_eq!(pyroscope_app_ok(found), found == sent, "{found}");
        }
    }

    #[test]
    fn encodes_all_but_unreserved() {
        assert_eq!(encode("app{k=v,k2=a b}"), "app%7Bk%3Dv%2Ck2%3Da%20b%7D");
        assert_eq!(encode("a-b._~Z9"), "a-b._~Z9");
    }

    #[test]
    fn outcomes_show_printable_bytes_only() {
        assert_eq!(with_body(400, b"bad\x00\x01 profile\r\n"), "HTTP 400: bad profile");
        assert_eq!(with_body(503, b""), "HTTP 503");
        assert_eq!(with_body(400, &[b'x'; 1000]).len(), "HTTP 400: ".len() + SHOWN_MAX);
    }

    #[test]
    fn redirects_say_where_and_what_to_do() {
        assert_eq!(
            redirect(301, Some("http://b:4318/p")),
            "HTTP 301 to http://b:4318/p: redirects are not followed; give push= that URL"
        );
        assert_eq!(redirect(307, Some("")), "HTTP 307: redirects are not followed; give push= the backend's URL");
        assert_eq!(redirect(302, None), redirect(302, Some("")));
    }

    #[test]
    fn pyroscope_times_cover_the_period() {
        let target = Target::parse("http://h:4040", Format::Pyroscope).unwrap();
        let mut cfg = Config::new(target, "a".into());
        cfg.sample_rate_hz = 0;
        let p =
            Period { body: b"JFR".to_vec(), from_unix_ns: 10_900_000_000, until_unix_ns: 20_100_000_000, samples: 1 };
        let req = request(&cfg, "a", &p, &mut Rng::seeded()).unwrap();
        assert_eq!(req.query, "name=a&from=10&until=21&format=jfr&spyName=hpm");
        assert!(!req.gzip);
    }
}
