//! hpm-push against local peers on 127.0.0.1 (ephemeral ports): what it sends, checked on the
//! wire, and what it counts when the peer answers 200, 500, 400, never answers, or is not there;
//! and hostile peers: an endless body or header line (read to their bounds), a redirect (not
//! followed), a `Retry-After` of decades (waited at most `backoff_max`, and not by `stop`).
//!
//! No sleeps: each peer thread tells the test, over a channel, what it received before the test
//! goes on; a test that needs the pusher to have finished calls `stop`, which joins its thread.
//! Timings are never asserted: only what happened, and in which order.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use hpm_push::{Config, Format, Period, Pusher, Target};

/// What a peer received.
#[derive(Debug)]
struct Req {
    request_line: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Req {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// Reads one request with a Content-Length body.
fn read_request(s: &TcpStream) -> Req {
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut r = BufReader::new(s);
    let mut request_line = String::new();
    r.read_line(&mut request_line).unwrap();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (k, v) = line.split_once(':').expect("a header line");
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    let mut req = Req { request_line: request_line.trim_end().to_string(), headers, body: Vec::new() };
    let len: usize = req.header("content-length").expect("a Content-Length").parse().unwrap();
    req.body.resize(len, 0);
    r.read_exact(&mut req.body).unwrap();
    req
}

fn answer(mut s: &TcpStream, code: u16, extra: &str, body: &[u8]) {
    let head = format!("HTTP/1.1 {code} X\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n", body.len());
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
}

/// A peer answering each connection in turn with the next of `codes`, sending what it received.
fn peer(codes: Vec<(u16, &'static str, &'static [u8])>) -> (String, Receiver<Req>, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let (tx, rx) = channel();
    let thread = thread::spawn(move || {
        for (code, extra, body) in codes {
            let (s, _) = listener.accept().unwrap();
            let req = read_request(&s);
            answer(&s, code, extra, body);
            tx.send(req).unwrap();
        }
    });
    (base, rx, thread)
}

fn config(url: &str, format: Format) -> Config {
    let mut cfg = Config::new(Target::parse(url, format).unwrap(), "shop".into());
    cfg.backoff_min = Duration::from_millis(1);
    cfg.backoff_max = Duration::from_millis(2);
    cfg
}

fn period(tag: u8, samples: u64) -> Period {
    let body: Vec<u8> = (0..4096u32).map(|i| tag ^ (i % 7) as u8).collect();
    Period { body, samples, from_unix_ns: 1_700_000_000_000_000_000, until_unix_ns: 1_700_000_060_000_000_000 }
}

fn gunzip(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(b).read_to_end(&mut out).unwrap();
    out
}

const GRACE: Duration = Duration::from_secs(60);

#[test]
fn delivers_gzipped_protobuf_with_its_headers() {
    let (base, rx, peer) = peer(vec![(200, "", b"")]);
    let pusher = Pusher::start(config(&base, Format::Otlp)).unwrap();
    let p = period(1, 42);
    pusher.offer(p.clone());
    let req = rx.recv().unwrap();
    let st = pusher.stop(GRACE);
    peer.join().unwrap();

    assert_eq!(req.request_line, "POST /v1development/profiles HTTP/1.1");
    assert_eq!(req.header("content-type"), Some("application/x-protobuf"));
    assert_eq!(req.header("content-encoding"), Some("gzip"));
    assert!(req.header("user-agent").unwrap().starts_with("hpm/"));
    assert_eq!(gunzip(&req.body), p.body);
    assert_eq!((st.delivered_periods, st.delivered_samples), (1, 42));
    assert_eq!(st.delivered_bytes, req.body.len() as u64);
    assert_eq!((st.attempts, st.queued_periods, st.undelivered_periods), (1, 0, 0));
    let last = st.last.unwrap();
    assert!(last.ok && last.what.starts_with("HTTP 200 in "), "{last:?}");
}

#[test]
fn closed_port_is_counted_undelivered_at_stop() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut cfg = config(&format!("http://127.0.0.1:{port}"), Format::Otlp);
    // After the first failure the thread waits; stop must end that wait and try once more.
    cfg.backoff_min = Duration::from_secs(3600);
    cfg.backoff_max = Duration::from_secs(3600);
    let target = cfg.target.clone();
    let pusher = Pusher::start(cfg).unwrap();
    pusher.offer(period(1, 7));
    let st = pusher.stop(GRACE);

    assert!(st.attempts >= 1);
    assert_eq!((st.delivered_periods, st.undelivered_periods, st.undelivered_samples), (0, 1, 7));
    assert_eq!(st.queued_periods, 0);
    let last = st.last.clone().unwrap();
    assert!(!last.ok);
    assert_eq!(last.what, "connection refused");
    let line = st.summary_line(&target);
    assert!(line.ends_with("1 period (7 samples) still queued at exit; last attempt: connection refused"), "{line}");
}

/// A peer that accepts one connection, reads the request, and never answers until told.
fn black_hole() -> (String, std::sync::mpsc::Receiver<Req>, std::sync::mpsc::Sender<()>, thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let (got_tx, got_rx) = channel();
    let (end_tx, end_rx) = channel::<()>();
    let hole = thread::spawn(move || {
        let (s, _) = listener.accept().unwrap();
        got_tx.send(read_request(&s)).unwrap();
        // Holds the connection open, never answering, until the test ends.
        let _ = end_rx.recv();
        drop(s);
    });
    (base, got_rx, end_tx, hole)
}

#[test]
fn black_hole_times_out_within_the_grace() {
    let (base, got_rx, end_tx, hole) = black_hole();
    let mut cfg = config(&base, Format::Otlp);
    cfg.io_timeout = Duration::from_millis(300);
    let pusher = Pusher::start(cfg).unwrap();
    pusher.offer(period(1, 5));
    got_rx.recv().unwrap();
    // The request is on the wire; the grace outlasts its timeout: the attempt's end is counted.
    let st = pusher.stop(Duration::from_secs(60));
    end_tx.send(()).unwrap();
    hole.join().unwrap();

    assert_eq!(st.attempts, 1);
    assert_eq!((st.undelivered_periods, st.undelivered_samples, st.delivered_periods), (1, 5, 0));
    let last = st.last.unwrap();
    assert!(!last.ok);
    assert_eq!(last.what, "timed out after 300 ms");
}

#[test]
fn black_hole_stop_returns_by_its_deadline() {
    let (base, got_rx, end_tx, hole) = black_hole();
    let mut cfg = config(&base, Format::Otlp);
    cfg.io_timeout = Duration::from_secs(3600);
    let pusher = Pusher::start(cfg).unwrap();
    pusher.offer(period(1, 5));
    got_rx.recv().unwrap();
    // Without grace, stop returns at once: the period on the wire is counted undelivered and
    // the attempt, left to end on its own, counts for nothing.
    let st = pusher.stop(Duration::ZERO);
    assert_eq!((st.undelivered_periods, st.undelivered_samples, st.delivered_periods), (1, 5, 0));
    assert_eq!(st.attempts, 0);
    end_tx.send(()).unwrap();
    hole.join().unwrap();
}

#[test]
fn server_error_is_retried_then_delivered() {
    let (base, rx, peer) = peer(vec![(500, "", b"try later"), (503, "Retry-After: 3600\r\n", b""), (200, "", b"")]);
    let pusher = Pusher::start(config(&base, Format::Otlp)).unwrap();
    let p = period(3, 9);
    pusher.offer(p.clone());
    let reqs: Vec<Req> = (0..3).map(|_| rx.recv().unwrap()).collect();
    let st = pusher.stop(GRACE);
    peer.join().unwrap();

    for r in &reqs {
        assert_eq!(gunzip(&r.body), p.body);
    }
    // Retry-After is honoured within backoff_max (2 ms here), or the third request never came.
    assert_eq!((st.attempts, st.delivered_periods, st.delivered_samples), (3, 1, 9));
    assert_eq!((st.refused_periods, st.undelivered_periods, st.dropped_full_periods), (0, 0, 0));
    assert!(st.last.unwrap().ok);
}

#[test]
fn client_error_is_refused_not_retried() {
    let (base, rx, peer) = peer(vec![(400, "", b"bad profile:\x00\x01 no samples\r\n")]);
    // A wrong retry would find the peer gone (refused) and count a second attempt.
    let cfg = config(&base, Format::Otlp);
    let target = cfg.target.clone();
    let pusher = Pusher::start(cfg).unwrap();
    pusher.offer(period(1, 11));
    rx.recv().unwrap();
    let st = pusher.stop(GRACE);
    peer.join().unwrap();

    assert_eq!((st.attempts, st.refused_periods, st.refused_samples), (1, 1, 11), "{st:?}");
    assert_eq!((st.delivered_periods, st.undelivered_periods), (0, 0));
    let last = st.last.clone().unwrap();
    assert_eq!(last.what, "HTTP 400: bad profile: no samples");
    assert!(st.summary_line(&target).contains("1 period (11 samples) refused by the backend"));
}

#[test]
fn full_queue_drops_the_oldest_first() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let (tx, rx) = channel::<Req>();
    let (go_tx, go_rx) = channel::<()>();
    let slow = thread::spawn(move || serve_after_release(&listener, &tx, &go_rx));
    let mut cfg = config(&base, Format::Otlp);
    cfg.max_periods = 2;
    let pusher = Pusher::start(cfg).unwrap();
    pusher.offer(period(1, 1));
    let first = rx.recv().unwrap();
    // Period 1 is on the wire and held; 2..5 queue behind it and 2, 3 are pushed out.
    for tag in 2..=5 {
        pusher.offer(period(tag, tag as u64));
    }
    let held = pusher.status();
    assert_eq!((held.dropped_full_periods, held.dropped_full_samples), (2, 2 + 3));
    assert_eq!((held.queued_periods, held.queued_bytes), (3, 3 * 4096));
    go_tx.send(()).unwrap();
    let rest: Vec<Req> = (0..2).map(|_| rx.recv().unwrap()).collect();
    let st = pusher.stop(GRACE);
    slow.join().unwrap();

    let sent: Vec<Vec<u8>> = [&first].into_iter().chain(&rest).map(|r| gunzip(&r.body)).collect();
    assert_eq!(sent, [period(1, 0).body, period(4, 0).body, period(5, 0).body]);
    assert_eq!((st.delivered_periods, st.delivered_samples), (3, 1 + 4 + 5));
    assert_eq!((st.dropped_full_periods, st.dropped_full_samples, st.undelivered_periods), (2, 5, 0));
}

/// Answers the first request only once released, then two more at once.
fn serve_after_release(listener: &TcpListener, tx: &Sender<Req>, go: &Receiver<()>) {
    let (s, _) = listener.accept().unwrap();
    tx.send(read_request(&s)).unwrap();
    go.recv().unwrap();
    answer(&s, 200, "", b"");
    for _ in 0..2 {
        let (s, _) = listener.accept().unwrap();
        let req = read_request(&s);
        answer(&s, 200, "", b"");
        tx.send(req).unwrap();
    }
}

#[test]
fn pyroscope_request_is_an_ingest_form_with_the_jfr() {
    let (base, rx, peer) = peer(vec![(200, "", b"")]);
    let mut cfg = config(&format!("{base}/pyro/"), Format::Pyroscope);
    cfg.app_name = "shop.cart".into();
    cfg.labels = vec![("env".into(), "prod".into()), ("region".into(), "eu 1".into())];
    cfg.sample_rate_hz = 1000;
    let pusher = Pusher::start(cfg).unwrap();
    let jfr = b"FLR\0 a JFR file's bytes \r\n--".to_vec();
    pusher.offer(Period {
        body: jfr.clone(),
        samples: 3,
        from_unix_ns: 1_700_000_000_500_000_000,
        until_unix_ns: 1_700_000_010_000_000_000,
    });
    let req = rx.recv().unwrap();
    let st = pusher.stop(GRACE);
    peer.join().unwrap();
    assert_eq!(st.delivered_periods, 1);

    let target = req.request_line.strip_prefix("POST ").unwrap().strip_suffix(" HTTP/1.1").unwrap();
    let (path, query) = target.split_once('?').unwrap();
    assert_eq!(path, "/pyro/ingest");
    let params: Vec<(String, String)> =
        query.split('&').map(|kv| kv.split_once('=').unwrap()).map(|(k, v)| (k.into(), decode(v))).collect();
    let want = [
        ("name", "shop.cart{env=prod,region=eu 1}"),
        ("from", "1700000000"),
        ("until", "1700000010"),
        ("format", "jfr"),
        ("spyName", "hpm"),
        ("sampleRate", "1000"),
    ];
    assert_eq!(params, want.map(|(k, v)| (k.to_string(), v.to_string())));

    assert_eq!(req.header("content-encoding"), None);
    let ct = req.header("content-type").unwrap();
    let boundary = ct.strip_prefix("multipart/form-data; boundary=").expect(ct);
    let body = String::from_utf8_lossy(&req.body);
    let parts: Vec<&str> = body.split(&format!("--{boundary}")).collect();
    // Preamble (empty), the one part, and the closing `--\r\n`.
    assert_eq!(parts.len(), 3, "{body}");
    assert_eq!((parts[0], parts[2]), ("", "--\r\n"));
    let (head, content) = parts[1].split_once("\r\n\r\n").unwrap();
    assert!(head.contains("Content-Disposition: form-data; name=\"jfr\"; filename=\"jfr\""), "{head}");
    assert_eq!(content.strip_suffix("\r\n").unwrap().as_bytes(), jfr);
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

#[test]
fn pyroscope_names_it_cannot_send_are_refused_at_start() {
    let mut cfg = config("http://127.0.0.1:1", Format::Pyroscope);
    cfg.labels = vec![("env".into(), "a,b".into())];
    let e = Pusher::start(cfg).err().unwrap();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    assert!(e.to_string().contains("label env="), "{e}");
}

/// How a hostile peer's connection ended: the bytes it wrote after the request, and whether it
/// ended because the client closed the connection (a write failed other than by its timeout).
#[derive(Debug)]
struct Served {
    written: u64,
    client_closed: bool,
}

/// A peer that, for every connection, reads the request and then writes `head` followed by
/// `endless` repeated until the write fails (or by nothing, when `endless` is empty); it tells
/// the test how each connection ended. Dropping the returned guard ends its thread.
fn hostile(head: String, endless: &'static [u8]) -> (String, Receiver<Served>, Hostile) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = channel();
    let (end_tx, end_rx) = channel::<()>();
    let thread = thread::spawn(move || {
        for conn in listener.incoming() {
            if end_rx.try_recv().is_ok() {
                return;
            }
            let mut s = conn.unwrap();
            read_request(&s);
            // A guard, not a timing: a client that stops reading without closing ends here.
            s.set_write_timeout(Some(Duration::from_secs(60))).unwrap();
            let mut written = 0u64;
            let mut result = s.write_all(head.as_bytes());
            if endless.is_empty() {
                let _ = tx.send(Served { written: 0, client_closed: false });
                continue;
            }
            while result.is_ok() {
                result = s.write_all(endless);
                written += endless.len() as u64;
            }
            let kind = result.unwrap_err().kind();
            let client_closed = !matches!(kind, std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut);
            if tx.send(Served { written, client_closed }).is_err() {
                return;
            }
        }
    });
    (format!("http://127.0.0.1:{}", addr.port()), rx, Hostile { end: end_tx, addr, thread: Some(thread) })
}

/// Ends a [`hostile`] peer's thread: told to end, then woken by one last connection.
struct Hostile {
    end: Sender<()>,
    addr: std::net::SocketAddr,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Hostile {
    fn drop(&mut self) {
        let _ = self.end.send(());
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A config whose timeouts are far longer than the tests take, so an attempt that ends shows a
/// bound was enforced, not a timeout; after a failure the thread waits until `stop`.
fn patient(base: &str) -> Config {
    let mut cfg = config(base, Format::Otlp);
    cfg.io_timeout = Duration::from_secs(600);
    cfg.backoff_min = Duration::from_secs(3600);
    cfg.backoff_max = Duration::from_secs(3600);
    cfg
}

/// 64 KiB of the same byte, written again and again.
static ENDLESS: [u8; 64 << 10] = [b'a'; 64 << 10];

#[test]
fn endless_body_is_read_to_its_bound_and_the_period_delivered() {
    // 200 without a length and without an end: the body runs until the connection closes.
    let (base, rx, peer) = hostile("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".into(), &ENDLESS);
    let pusher = Pusher::start(patient(&base)).unwrap();
    pusher.offer(period(1, 4));
    let served = rx.recv().unwrap();
    let st = pusher.stop(GRACE);
    drop(peer);

    // The client closed the connection after its bounded read (not a timeout, which is 10
    // minutes here): what the peer wrote is that read plus the sockets' buffers.
    assert!(served.client_closed, "{served:?}");
    assert!(served.written < 64 << 20, "{served:?}");
    assert_eq!((st.attempts, st.delivered_periods, st.delivered_samples), (1, 1, 4), "{st:?}");
    assert!(st.last.unwrap().ok);
}

#[test]
fn endless_header_line_is_cut_at_its_bound_and_retried() {
    let (base, rx, peer) = hostile("HTTP/1.1 200 OK\r\nX-Endless: ".into(), &ENDLESS[..4096]);
    let cfg = patient(&base);
    let target = cfg.target.clone();
    let pusher = Pusher::start(cfg).unwrap();
    pusher.offer(period(1, 6));
    let served = rx.recv().unwrap();
    let st = pusher.stop(GRACE);
    drop(peer);

    assert!(served.client_closed, "{served:?}");
    assert!(served.written < 64 << 20, "{served:?}");
    // Not delivered: kept for a retry, then counted at stop (one more attempt may have failed).
    assert_eq!(
        (st.delivered_periods, st.refused_periods, st.undelivered_periods, st.undelivered_samples),
        (0, 0, 1, 6)
    );
    let last = st.last.clone().unwrap();
    assert!(!last.ok);
    let line = st.summary_line(&target);
    assert!(
        line.ends_with(
            "1 period (6 samples) still queued at exit; last attempt: the answer's headers passed 16 KiB; \
             is push= an OTLP or Pyroscope backend?"
        ),
        "{line}"
    );
}

#[test]
fn redirects_are_not_followed() {
    let elsewhere = TcpListener::bind("127.0.0.1:0").unwrap();
    let to = format!("http://{}/v1development/profiles", elsewhere.local_addr().unwrap());
    let moved = format!("HTTP/1.1 301 Moved\r\nLocation: {to}\r\nContent-Length: 0\r\n\r\n");
    let (base, rx, peer) = hostile(moved, b"");
    let cfg = patient(&base);
    let target = cfg.target.clone();
    let pusher = Pusher::start(cfg).unwrap();
    pusher.offer(period(1, 3));
    rx.recv().unwrap();
    let st = pusher.stop(GRACE);
    drop(peer);

    // The pusher's thread has ended: had it followed the redirect, its connection would be
    // waiting in the other listener's backlog.
    elsewhere.set_nonblocking(true).unwrap();
    let followed = elsewhere.accept();
    assert!(matches!(&followed, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock), "{followed:?}");
    // Kept for a retry (the stop tried once more, unless it came before the first was counted).
    assert!((1..=2).contains(&st.attempts), "{st:?}");
    assert_eq!((st.delivered_periods, st.refused_periods, st.undelivered_periods), (0, 0, 1), "{st:?}");
    let last = st.last.clone().unwrap();
    assert!(!last.ok);
    // The line says where the backend points and what to do.
    let want = format!("last attempt: HTTP 301 to {to}: redirects are not followed; give push= that URL");
    let line = st.summary_line(&target);
    assert!(line.ends_with(&format!("1 period (3 samples) still queued at exit; {want}")), "{line}");
}

#[test]
fn a_huge_retry_after_waits_at_most_backoff_max() {
    // backoff_max is 2 ms here: the second request comes, or Retry-After silenced the pusher.
    let (base, rx, peer) = peer(vec![
        (429, "Retry-After: 999999999\r\n", b"slow down"),
        (429, "Retry-After: 18446744073709551616\r\n", b""),
        (200, "", b""),
    ]);
    let pusher = Pusher::start(config(&base, Format::Otlp)).unwrap();
    pusher.offer(period(2, 8));
    let reqs: Vec<Req> = (0..3).map(|_| rx.recv().unwrap()).collect();
    let st = pusher.stop(GRACE);
    peer.join().unwrap();
    assert_eq!(reqs.len(), 3);
    assert_eq!((st.attempts, st.delivered_periods, st.delivered_samples), (3, 1, 8), "{st:?}");
}

#[test]
fn a_huge_retry_after_does_not_hold_the_stop() {
    // Default bounds: the wait after the 429 is backoff_max's minute; stop ends it at once.
    let (base, rx, peer) =
        hostile("HTTP/1.1 429 Busy\r\nRetry-After: 999999999\r\nContent-Length: 0\r\n\r\n".into(), b"");
    let mut cfg = config(&base, Format::Otlp);
    cfg.backoff_max = Duration::from_secs(60);
    let target = cfg.target.clone();
    let pusher = Pusher::start(cfg).unwrap();
    pusher.offer(period(3, 5));
    rx.recv().unwrap();
    let st = pusher.stop(GRACE);
    drop(peer);

    assert!((1..=2).contains(&st.attempts), "{st:?}");
    assert_eq!((st.delivered_periods, st.undelivered_periods, st.undelivered_samples), (0, 1, 5), "{st:?}");
    let line = st.summary_line(&target);
    assert!(line.ends_with("1 period (5 samples) still queued at exit; last attempt: HTTP 429"), "{line}");
}
