//! A push backend inside the test: a listener on 127.0.0.1 (an ephemeral port) that reads one
//! HTTP request per connection, answers it with the status given and closes, and hands each
//! request to the test over a channel. What the agent pushed is then read without a collector.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use prost::Message;

/// A request body read at most (a period of a test's workload is far smaller).
const MAX_BODY: usize = 64 << 20;
/// A header section read at most.
const MAX_HEAD: u64 = 64 << 10;

/// One HTTP request received.
#[derive(Debug)]
pub struct Request {
    pub method: String,
    /// The request target (path and query).
    pub path: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The body, gunzipped if its `Content-Encoding` is gzip.
    pub fn body_decoded(&self) -> Vec<u8> {
        if self.header("content-encoding") != Some("gzip") {
            return self.body.clone();
        }
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&self.body[..])
            .take(MAX_BODY as u64)
            .read_to_end(&mut out)
            .expect("the body gunzips");
        out
    }

    /// The body as an OTLP profiles request.
    pub fn otlp(&self) -> ExportProfilesServiceRequest {
        ExportProfilesServiceRequest::decode(&self.body_decoded()[..]).expect("the body is an OTLP profiles request")
    }
}

/// The listener; its thread lives as long as the test process.
pub struct Backend {
    pub port: u16,
    requests: Receiver<Request>,
}

impl Backend {
    /// Answers every request with `status` (200: accepted).
    pub fn start(status: u16) -> Backend {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().unwrap().port();
        let (tx, requests) = mpsc::channel();
        std::thread::spawn(move || serve(listener, status, tx));
        Backend { port, requests }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The requests received so far (every one, once the pushing JVM has exited).
    pub fn received(&self) -> Vec<Request> {
        self.requests.try_iter().collect()
    }
}

/// A port nothing listens on (bound, then closed).
pub fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    l.local_addr().unwrap().port()
}

fn serve(listener: TcpListener, status: u16, tx: Sender<Request>) {
    for conn in listener.incoming() {
        let Ok(mut conn) = conn else { continue };
        // A client that stalls cannot hold the listener.
        let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
        if let Ok(r) = read_request(&mut conn) {
            let reason = if status == 200 { "OK" } else { "Status" };
            let _ = write!(conn, "HTTP/1.1 {status} {reason}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            let _ = conn.flush();
            if tx.send(r).is_err() {
                return;
            }
        }
    }
}

fn read_request(conn: &mut TcpStream) -> std::io::Result<Request> {
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string());
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut head = (&mut reader).take(MAX_HEAD);
    let mut line = String::new();
    head.read_line(&mut line)?;
    let mut words = line.split_whitespace();
    let (method, path) = (words.next().unwrap_or("").to_string(), words.next().unwrap_or("").to_string());
    let mut headers = Vec::new();
    loop {
        line.clear();
        if head.read_line(&mut line)? == 0 {
            return Err(bad("the header section ended early"));
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (n, v) = l.split_once(':').ok_or_else(|| bad("a header without `:`"))?;
        headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let find = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v): &(String, String)| v.clone());
    let body = if find("transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
        read_chunked(&mut reader)?
    } else {
        let len: usize = find("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
        if len > MAX_BODY {
            return Err(bad("body over the bound"));
        }
        let mut body = vec![0; len];
        reader.read_exact(&mut body)?;
        body
    };
    Ok(Request { method, path, headers, body })
}

fn read_chunked(reader: &mut impl BufRead) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        reader.take(1024).read_line(&mut line)?;
        let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "chunk size"))?;
        if body.len() + size > MAX_BODY {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "body over the bound"));
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        line.clear();
        reader.take(1024).read_line(&mut line)?;
        if size == 0 {
            return Ok(body);
        }
    }
}
