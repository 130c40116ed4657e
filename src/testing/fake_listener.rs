//! Listeners on 127.0.0.1 that are not the server an engine expects, for
//! the tests of how a server engine fails against them.
// Built without a server engine, only `sockets_alone` has a user.
#![cfg_attr(
    not(any(feature = "redis", feature = "postgres", feature = "mongodb")),
    allow(dead_code)
)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};

/// Held by a test that opens sockets in this process and by the test that
/// counts this process's socket bytes, which others' sockets would skew.
pub fn sockets_alone() -> MutexGuard<'static, ()> {
    static SOCKETS: Mutex<()> = Mutex::new(());
    SOCKETS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Accepts connections (the kernel does) and never answers. Keep the
/// listener alive while connecting to it.
pub fn silent() -> (TcpListener, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    (listener, port)
}

/// Serves every connection with `serve` on its own thread; the count is of
/// the connections accepted so far.
pub fn serving(serve: fn(TcpStream)) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            count.fetch_add(1, Relaxed);
            std::thread::spawn(move || serve(stream));
        }
    });
    (port, accepted)
}

/// Answers like an HTTP server to anything, then closes.
pub fn http(mut stream: TcpStream) {
    let mut buf = [0; 1024];
    let _ = stream.read(&mut buf);
    let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n");
}

/// Closes every connection at once, as a server going down does.
pub fn closing(stream: TcpStream) {
    drop(stream);
}
