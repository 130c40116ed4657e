//! `--metrics-addr`: serves `GET /metrics` in the Prometheus text format
//! on a local address while kvperf runs, so the Prometheus a team already
//! runs can scrape a long study. One thread, one request at a time; it
//! ends with the process.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use crate::error::InputError;

/// What a scrape returns, made afresh for each.
pub type Render = Arc<dyn Fn() -> String + Send + Sync>;

/// How long a client may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(2);
/// The most of a request read (its line and headers).
const MOST_REQUEST_BYTES: usize = 8192;

/// Listens on `addr` (checked now, before anything is measured) and
/// answers each scrape with `render()`; returns the address listened on
/// (port 0 picks a free one).
pub fn serve(addr: &str, render: Render) -> Result<SocketAddr, InputError> {
    let parsed: SocketAddr = addr.parse().map_err(|_| {
        InputError::Invalid(format!(
            "--metrics-addr '{addr}' is not an address and port (e.g. 127.0.0.1:9464)"
        ))
    })?;
    let listener = TcpListener::bind(parsed).map_err(|e| {
        InputError::Invalid(format!("--metrics-addr {addr}: cannot listen there: {e}"))
    })?;
    let local = listener
        .local_addr()
        .map_err(|e| InputError::Invalid(format!("--metrics-addr {addr}: {e}")))?;
    std::thread::Builder::new()
        .name("kvperf-metrics".into())
        .spawn(move || {
            for stream in listener.incoming().flatten() {
                // One scrape's failure (a client gone) is that client's.
                let _ = answer(stream, &render);
            }
        })
        .map_err(|e| InputError::Invalid(format!("--metrics-addr {addr}: {e}")))?;
    Ok(local)
}

fn answer(mut stream: TcpStream, render: &Render) -> std::io::Result<()> {
    stream.set_read_timeout(Some(READ_TIMEOUT))?;
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < MOST_REQUEST_BYTES {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            break;
        }
        request.extend_from_slice(&buf[..n]);
    }
    let line = request.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    let (status, body) = match (words.next(), words.next()) {
        (Some("GET"), Some(path)) if path == "/metrics" || path.starts_with("/metrics?") => {
            ("200 OK", render())
        }
        (Some("GET"), Some(_)) => ("404 Not Found", "kvperf serves /metrics\n".to_string()),
        _ => (
            "400 Bad Request",
            "kvperf serves GET /metrics\n".to_string(),
        ),
    };
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(addr: SocketAddr, path: &str) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        text
    }

    #[test]
    fn answers_metrics_and_only_metrics() {
        let addr = serve("127.0.0.1:0", Arc::new(|| "kvperf_up 1\n".to_string())).unwrap();
        let ok = get(addr, "/metrics");
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.contains("text/plain; version=0.0.4"), "{ok}");
        assert!(ok.ends_with("\r\n\r\nkvperf_up 1\n"), "{ok}");
        assert!(get(addr, "/").starts_with("HTTP/1.1 404"));
    }

    #[test]
    fn a_bad_or_taken_address_is_one_line() {
        let e = serve("localhost", Arc::new(String::new)).unwrap_err();
        assert!(e.to_string().contains("is not an address and port"), "{e}");
        let taken = serve("127.0.0.1:0", Arc::new(String::new)).unwrap();
        let e = serve(&taken.to_string(), Arc::new(String::new)).unwrap_err();
        assert!(e.to_string().contains("cannot listen there"), "{e}");
    }
}
