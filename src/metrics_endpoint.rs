//! `--metrics-addr`: serves `GET /metrics` in the Prometheus text format
//! on a local address while kvperf runs, so the Prometheus a team already
//! runs can scrape a long study. Each client is answered on a thread of
//! its own, with a deadline for its whole request and a bound on its
//! size, and at most [`MOST_CLIENTS`] at once (more wait in the listen
//! queue): a client that sends slowly or never finishes costs its own
//! thread that long, never another scrape. The measuring threads never
//! wait for it (a scrape only copies the latest figures). It ends with
//! the process.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::error::InputError;

/// What a scrape returns, made afresh for each.
pub type Render = Arc<dyn Fn() -> String + Send + Sync>;

/// How long a client may take to send its whole request (its line and
/// headers), however it spreads the bytes.
const REQUEST_DEADLINE: Duration = Duration::from_secs(2);
/// How long a client may take to take the answer.
const WRITE_TIMEOUT: Duration = Duration::from_secs(2);
/// The most of a request read (its line and headers).
const MOST_REQUEST_BYTES: usize = 8192;
/// Clients answered at once.
const MOST_CLIENTS: usize = 128;
/// Each client's thread needs little: a request buffer and the figures.
const CLIENT_STACK: usize = 64 * 1024;

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
        .spawn(move || accept(listener, render))
        .map_err(|e| InputError::Invalid(format!("--metrics-addr {addr}: {e}")))?;
    Ok(local)
}

/// Clients being answered, and a wake-up when one is done.
#[derive(Default)]
struct Slots {
    busy: Mutex<usize>,
    freed: Condvar,
}

impl Slots {
    /// Waits for a free slot and takes it.
    fn take(&self) {
        let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        while *busy >= MOST_CLIENTS {
            busy = self.freed.wait(busy).unwrap_or_else(|e| e.into_inner());
        }
        *busy += 1;
    }

    fn give_back(&self) {
        let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        *busy = busy.saturating_sub(1);
        self.freed.notify_one();
    }
}

/// A taken slot, given back when the client's thread ends, however.
struct Slot(Arc<Slots>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.give_back();
    }
}

fn accept(listener: TcpListener, render: Render) {
    let slots = Arc::new(Slots::default());
    loop {
        slots.take();
        let slot = Slot(slots.clone());
        let Ok((stream, _)) = listener.accept() else {
            // A client gone before it was accepted, or no descriptors
            // left for now: the slot is given back, the next one tried.
            drop(slot);
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        let render = render.clone();
        // One scrape's failure (a client gone, too slow) is that client's.
        // A thread that cannot start drops its stream and slot with it.
        let _ = std::thread::Builder::new()
            .name("kvperf-scrape".into())
            .stack_size(CLIENT_STACK)
            .spawn(move || {
                let _slot = slot;
                let _ = answer(stream, &render);
            });
    }
}

/// The request's bytes up to its blank line, read within
/// [`REQUEST_DEADLINE`] in all and at most [`MOST_REQUEST_BYTES`].
fn read_request(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let deadline = Instant::now() + REQUEST_DEADLINE;
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < MOST_REQUEST_BYTES {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        stream.set_read_timeout(Some(left))?;
        let room = (MOST_REQUEST_BYTES - request.len()).min(buf.len());
        let n = stream.read(&mut buf[..room])?;
        if n == 0 {
            break;
        }
        request.extend_from_slice(&buf[..n]);
    }
    Ok(request)
}

fn answer(mut stream: TcpStream, render: &Render) -> std::io::Result<()> {
    stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
    let request = read_request(&mut stream)?;
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
