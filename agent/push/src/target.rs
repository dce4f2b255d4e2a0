//! Where `push=` sends: `http://HOST[:PORT][/PATH]`, checked once at parse time.

use std::net::Ipv6Addr;

/// At most this many bytes of a `push=` URL.
pub const URL_MAX: usize = 2048;

/// The OTLP/HTTP path for profiles when the URL gives none.
const OTLP_PATH: &str = "/v1development/profiles";

/// What the backend speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// OTLP profiles over HTTP (`/v1development/profiles`), gzipped protobuf.
    Otlp,
    /// Pyroscope's `/ingest?format=jfr`.
    Pyroscope,
}

/// Where `push=` sends: a host, a port and the path POSTed to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub format: Format,
    /// As written: a name, an IPv4 address or a bracketed IPv6 address.
    host: String,
    port: u16,
    /// The path POSTed to: OTLP's as given (or the default), Pyroscope's base + `/ingest`.
    path: String,
}

impl Target {
    /// Parses `http://HOST[:PORT][/PATH]` (port 80 when not given). OTLP: PATH defaults to
    /// `/v1development/profiles` (a path given is used as is). Pyroscope: PATH is the server's base
    /// and `/ingest` is appended. https, credentials, a query, a fragment, non-ASCII or a URL over
    /// [`URL_MAX`] bytes are refused with the reason, which does not repeat the URL (the caller
    /// names it, as it can show it).
    pub fn parse(url: &str, format: Format) -> Result<Target, String> {
        if url.len() > URL_MAX {
            return Err(format!("the URL is {} bytes long; at most {URL_MAX} are accepted", url.len()));
        }
        if !url.is_ascii() {
            return Err("the URL is not ASCII; percent-encode its path".into());
        }
        if let Some(c) = url.chars().find(|c| c.is_ascii_control() || *c == ' ') {
            return Err(format!("the URL holds {c:?}; percent-encode it"));
        }
        let Some((scheme, rest)) = url.split_once("://") else {
            return Err("the URL must start with http://".into());
        };
        if scheme.eq_ignore_ascii_case("https") {
            return Err("https is refused: libhpm.so carries no TLS; push to an OpenTelemetry Collector on this \
                        host (push=http://127.0.0.1:4318), which forwards with TLS and credentials"
                .into());
        }
        if !scheme.eq_ignore_ascii_case("http") {
            return Err("the URL must start with http://".into());
        }
        if rest.contains('#') {
            return Err("the URL has a fragment (#...); remove it".into());
        }
        if rest.contains('?') {
            return Err("the URL has a query (?...); give a path only".into());
        }
        let (authority, path) = match rest.find('/') {
            Some(i) => rest.split_at(i),
            None => (rest, ""),
        };
        if authority.contains('@') {
            return Err("the URL carries credentials, which are refused: give them to the OpenTelemetry \
                        Collector on this host, which forwards with them"
                .into());
        }
        let (host, port) = host_port(authority)?;
        check_path(path)?;
        let path = match format {
            Format::Otlp if path.is_empty() || path == "/" => OTLP_PATH.to_string(),
            Format::Otlp => path.to_string(),
            Format::Pyroscope => format!("{}/ingest", path.trim_end_matches('/')),
        };
        Ok(Target { format, host: host.to_ascii_lowercase(), port, path })
    }

    /// The URL POSTed to (without Pyroscope's query).
    pub fn display(&self) -> String {
        format!("http://{}:{}{}", self.host, self.port, self.path)
    }

    /// The URL POSTed to, with `query` (already encoded) if not empty.
    pub(crate) fn url(&self, query: &str) -> String {
        if query.is_empty() {
            self.display()
        } else {
            format!("{}?{query}", self.display())
        }
    }
}

/// Splits `HOST[:PORT]`, checking both.
fn host_port(authority: &str) -> Result<(&str, u16), String> {
    let (host, port) = if let Some(inner) = authority.strip_prefix('[') {
        let end = inner.find(']').ok_or("an IPv6 address lacks its closing ]")?;
        inner[..end].parse::<Ipv6Addr>().map_err(|_| "the text in [ ] is not an IPv6 address")?;
        let after = &inner[end + 1..];
        let port = match after {
            "" => None,
            _ => Some(after.strip_prefix(':').ok_or("text after the IPv6 address is not :PORT")?),
        };
        (&authority[..end + 2], port)
    } else {
        match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err("it names no host".into());
    }
    let name_ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_');
    if !host.starts_with('[') && host.len() > 253 {
        return Err(format!("the host name is {} bytes long; at most 253 are accepted", host.len()));
    }
    if !host.starts_with('[') && !host.chars().all(name_ok) {
        return Err("the host is not a name (letters, digits, . - _) nor an address".into());
    }
    let port = match port {
        None => 80,
        Some(p) if !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => return Err(format!("port {p} is not in 1..65535")),
        },
        Some(_) => return Err("the port is not a number in 1..65535".into()),
    };
    Ok((host, port))
}

/// A path of RFC 3986 path characters, with well-formed %XX escapes.
fn check_path(path: &str) -> Result<(), String> {
    let b = path.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'%' {
            if i + 2 >= b.len() || !b[i + 1].is_ascii_hexdigit() || !b[i + 2].is_ascii_hexdigit() {
                return Err(format!("the path has a malformed %-escape at byte {i}"));
            }
            i += 3;
            continue;
        }
        let ok = c.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/".contains(&c);
        if !ok {
            return Err(format!("the path holds {:?}; percent-encode it", c as char));
        }
        i += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts() {
        let cases = [
            ("http://127.0.0.1:4318", Format::Otlp, "http://127.0.0.1:4318/v1development/profiles"),
            ("http://localhost:4318/", Format::Otlp, "http://localhost:4318/v1development/profiles"),
            ("HTTP://Collector.Local", Format::Otlp, "http://collector.local:80/v1development/profiles"),
            ("http://[::1]:4318/custom/p", Format::Otlp, "http://[::1]:4318/custom/p"),
            ("http://[::1]", Format::Otlp, "http://[::1]:80/v1development/profiles"),
            ("http://otel_col:65535/a%2Fb", Format::Otlp, "http://otel_col:65535/a%2Fb"),
            ("http://pyro:4040", Format::Pyroscope, "http://pyro:4040/ingest"),
            ("http://pyro:4040/", Format::Pyroscope, "http://pyro:4040/ingest"),
            ("http://pyro:4040/base/", Format::Pyroscope, "http://pyro:4040/base/ingest"),
        ];
        for (url, format, want) in cases {
            let t = Target::parse(url, format).unwrap_or_else(|e| panic!("{url}: {e}"));
            assert_eq!(t.display(), want, "{url}");
            assert_eq!(t.format, format);
        }
    }

    #[test]
    fn refuses_with_the_reason() {
        let long = format!("http://h/{}", "a".repeat(URL_MAX));
        let cases: [(&str, &str); 19] = [
            ("https://h:4318", "carries no TLS"),
            ("HTTPS://h", "carries no TLS"),
            ("ftp://h", "must start with http://"),
            ("h:4318", "must start with http://"),
            ("http://user:pw@h:4318", "credentials"),
            ("http://h:4318/p?x=1", "query"),
            ("http://h:4318/p#f", "fragment"),
            ("http://hé:4318", "not ASCII"),
            ("http://h :4318", "percent-encode"),
            ("http://h:4318/a\tb", "percent-encode"),
            ("http://", "no host"),
            ("http://:4318", "no host"),
            ("http://h:0", "1..65535"),
            ("http://h:65536", "1..65535"),
            ("http://h:", "1..65535"),
            ("http://h:12ab", "1..65535"),
            ("http://[::1", "closing ]"),
            ("http://h:1/a%zz", "%-escape"),
            (&long, "at most 2048"),
        ];
        for (url, why) in cases {
            let e = Target::parse(url, Format::Otlp).expect_err(url);
            assert!(e.contains(why), "{url}: {e}");
            assert!(!e.contains('\n'), "{e}");
            // The caller names the URL, clipped: the reason does not repeat it.
            assert!(!e.contains(url) && e.len() < 200, "{url}: {e}");
        }
        for url in ["http://h:1/a%", "http://h:1/a%2", "http://[zz]:1", "http://h!x:1", "http://[::1]x"] {
            assert!(Target::parse(url, Format::Otlp).is_err(), "{url}");
        }
        let hosts = [format!("http://{}:1", "h".repeat(300)), format!("http://[{}]", "1".repeat(300))];
        for url in hosts.iter().chain([&format!("http://h:{}", "9".repeat(300))]) {
            let e = Target::parse(url, Format::Otlp).expect_err(url);
            assert!(e.len() < 100, "{e}");
        }
    }
}
