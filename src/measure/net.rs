//! Bytes that cross the network, counted at the client: the kernel's
//! per-socket TCP counters (`TCP_INFO`: bytes acknowledged by the peer,
//! bytes received) of every TCP socket this process holds, read before and
//! after a window. Only this process's sockets count, so a server's own
//! replication traffic or another client is never in the figure.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Bytes sent (acknowledged by the peer) and received over a window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct NetworkBytes {
    pub sent: u64,
    pub received: u64,
    /// TCP connections that moved bytes in the window.
    pub sockets: u64,
}

/// The counters of every TCP socket of this process, by socket inode.
#[derive(Debug, Clone, Default)]
pub struct SocketBytes {
    per_socket: BTreeMap<u64, (u64, u64)>,
}

impl SocketBytes {
    pub fn read() -> Self {
        let mut per_socket = BTreeMap::new();
        let Ok(fds) = std::fs::read_dir("/proc/self/fd") else {
            return Self { per_socket };
        };
        for entry in fds.flatten() {
            let Some(fd) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok())
            else {
                continue;
            };
            let Some(inode) = std::fs::read_link(entry.path()).ok().and_then(|l| {
                let l = l.to_string_lossy().into_owned();
                l.strip_prefix("socket:[")?
                    .strip_suffix(']')?
                    .parse::<u64>()
                    .ok()
            }) else {
                continue;
            };
            if let Some(counts) = tcp_counts(fd) {
                per_socket.insert(inode, counts);
            }
        }
        Self { per_socket }
    }

    /// What `self` (the later reading) adds to `earlier`; a socket opened
    /// in between counts from zero.
    pub fn since(&self, earlier: &SocketBytes) -> NetworkBytes {
        let mut total = NetworkBytes::default();
        for (inode, (sent, received)) in &self.per_socket {
            let (s0, r0) = earlier.per_socket.get(inode).copied().unwrap_or((0, 0));
            let (ds, dr) = (sent.saturating_sub(s0), received.saturating_sub(r0));
            total.sent += ds;
            total.received += dr;
            total.sockets += u64::from(ds + dr > 0);
        }
        total
    }
}

/// (bytes acked, bytes received) of `fd` if it is a TCP socket.
fn tcp_counts(fd: i32) -> Option<(u64, u64)> {
    // SAFETY: getsockopt writes at most `len` bytes into `info`; a
    // descriptor that is not a TCP socket makes it fail, nothing else.
    unsafe {
        let mut info: libc::tcp_info = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        let rc = libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        );
        (rc == 0).then_some((info.tcpi_bytes_acked, info.tcpi_bytes_received))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn a_known_exchange_is_counted_on_this_side() {
        let _alone = crate::testing::fake_listener::sockets_alone();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut client = std::net::TcpStream::connect(addr).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        let before = SocketBytes::read();
        client.write_all(&[7u8; 100_000]).unwrap();
        let mut buf = vec![0u8; 100_000];
        server.read_exact(&mut buf).unwrap();
        server.write_all(&[1u8; 2_000]).unwrap();
        let mut reply = vec![0u8; 2_000];
        client.read_exact(&mut reply).unwrap();
        let n = SocketBytes::read().since(&before);
        // Both ends are in this process: each byte is sent once and received once.
        assert_eq!((n.sent, n.received), (102_000, 102_000), "{n:?}");
        assert_eq!(n.sockets, 2);
    }
}
