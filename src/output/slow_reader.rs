//! Writes to stdout and stderr that a reader who stops reading cannot hold
//! for ever (pass 14: a harness that reads only stdout, a paused pager).
//! A blocking write(2) to a full pipe waits until the reader reads, and
//! SIGINT or SIGTERM (whose handlers restart it) does not end the wait:
//! the status thread stuck in a status line kept a run from ending after
//! its window, and the run's JSON with it.
//!
//! A pipe or FIFO is written through a private non-blocking open file
//! description of it (`/proc/self/fd/N`): O_NONBLOCK set on fd N itself
//! would change the description kvperf shares with its parent, its
//! children and whoever else writes that pipe. A socket is written with
//! MSG_DONTWAIT, which changes nothing shared. Regular files (whose
//! O_APPEND must stay), terminals and devices are written as before.

use std::io::{Error, ErrorKind, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long a status line or a warning may wait for stderr's reader.
pub const STDERR_WAIT: Duration = Duration::from_secs(2);

/// How long a result still waits for stdout's reader after an interrupt.
pub const AFTER_INTERRUPT: Duration = Duration::from_secs(1);

/// How a write may wait for a reader that takes nothing.
#[derive(Debug, Clone, Copy)]
pub enum Wait {
    /// At most this long; once a write gave up, later writes go through
    /// only if the stream takes them at once (a reader that stopped for
    /// good costs kvperf one wait, not one per line).
    Bounded(Duration),
    /// For a result: as long as nothing interrupts kvperf, then at most
    /// [`AFTER_INTERRUPT`].
    UntilInterrupted,
}

/// Standard output or error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Std {
    Out,
    Err,
}

impl Std {
    fn fd(self) -> RawFd {
        match self {
            Std::Out => 1,
            Std::Err => 2,
        }
    }

    fn index(self) -> usize {
        match self {
            Std::Out => 0,
            Std::Err => 1,
        }
    }
}

/// What a standard stream is, found at its first write.
enum Kind {
    Pipe,
    Socket,
    /// A regular file, a terminal, a device: written as before.
    Other,
}

static KINDS: [OnceLock<Kind>; 2] = [OnceLock::new(), OnceLock::new()];
/// The private non-blocking descriptions of pipes, once opened.
static PRIVATE: [OnceLock<OwnedFd>; 2] = [OnceLock::new(), OnceLock::new()];
/// Set once a bounded write to the stream gave up.
static GAVE_UP: [AtomicBool; 2] = [AtomicBool::new(false), AtomicBool::new(false)];

fn kind(stream: Std) -> &'static Kind {
    KINDS[stream.index()].get_or_init(|| {
        let fd = stream.fd();
        // SAFETY: fstat(2) and fcntl(F_GETFL) on a descriptor number into
        // a zeroed struct this function owns; a closed fd fails them.
        let (st, flags) = unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            (
                (libc::fstat(fd, &mut st) == 0).then_some(st),
                libc::fcntl(fd, libc::F_GETFL),
            )
        };
        // A stream opened for reading only is not reopened for writing.
        let writable = flags >= 0 && flags & libc::O_ACCMODE != libc::O_RDONLY;
        match st.map(|st| st.st_mode & libc::S_IFMT) {
            Some(libc::S_IFIFO) if writable => Kind::Pipe,
            Some(libc::S_IFSOCK) => Kind::Socket,
            _ => Kind::Other,
        }
    })
}

/// The private non-blocking description of a pipe `stream`; None when it
/// cannot be opened (a FIFO without a reader: ENXIO), and the stream is
/// then written as before (a reader gone fails the write at once).
fn private(stream: Std) -> Option<RawFd> {
    let slot = &PRIVATE[stream.index()];
    if let Some(fd) = slot.get() {
        return Some(fd.as_raw_fd());
    }
    let path = format!("/proc/self/fd/{}\0", stream.fd());
    // SAFETY: open(2) of a NUL-terminated path; the new descriptor is
    // owned by the OwnedFd made from it at once.
    let fd = unsafe {
        libc::open(
            path.as_ptr().cast(),
            libc::O_WRONLY | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY,
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    // Two threads may open it at once: one description is kept, the
    // other closed with its OwnedFd.
    Some(slot.get_or_init(|| owned).as_raw_fd())
}

/// Writes all of `bytes` to `stream`, waiting for its reader as `wait`
/// says. The caller holds the stream's std lock, so lines stay whole, and
/// answers for SIGPIPE.
pub fn write_all(stream: Std, bytes: &[u8], wait: Wait) -> std::io::Result<()> {
    let (fd, socket) = match kind(stream) {
        Kind::Pipe => match private(stream) {
            Some(fd) => (fd, false),
            None => return blocking(stream, bytes),
        },
        Kind::Socket => (stream.fd(), true),
        Kind::Other => return blocking(stream, bytes),
    };
    let mut waiting = Waiting::new(stream, wait);
    let mut left = bytes;
    while !left.is_empty() {
        // SAFETY: write(2)/send(2) of a live slice on a descriptor this
        // process has open.
        let n = unsafe {
            if socket {
                libc::send(fd, left.as_ptr().cast(), left.len(), libc::MSG_DONTWAIT)
            } else {
                libc::write(fd, left.as_ptr().cast(), left.len())
            }
        };
        if n >= 0 {
            left = &left[n as usize..];
            continue;
        }
        let e = Error::last_os_error();
        match e.kind() {
            ErrorKind::Interrupted => {}
            ErrorKind::WouldBlock => waiting.until_writable(stream.fd())?,
            _ => return Err(e),
        }
    }
    Ok(())
}

/// A write as before this module: std's, which blocks.
fn blocking(stream: Std, bytes: &[u8]) -> std::io::Result<()> {
    match stream {
        Std::Out => {
            let mut out = std::io::stdout().lock();
            out.write_all(bytes)?;
            out.flush()
        }
        Std::Err => std::io::stderr().lock().write_all(bytes),
    }
}

/// One write's wait for its reader.
struct Waiting {
    stream: Std,
    wait: Wait,
    started: Instant,
    /// When an interrupt was first seen ([`Wait::UntilInterrupted`]).
    interrupted_at: Option<Instant>,
}

/// How long one poll(2) sleeps before the wait's limits are looked at.
const POLL_SLICE: Duration = Duration::from_millis(50);

impl Waiting {
    fn new(stream: Std, wait: Wait) -> Self {
        Self {
            stream,
            wait,
            started: Instant::now(),
            interrupted_at: None,
        }
    }

    /// Returns once `fd` may take more, or the error that ends the wait.
    fn until_writable(&mut self, fd: RawFd) -> std::io::Result<()> {
        loop {
            let now = Instant::now();
            let left = match self.wait {
                Wait::Bounded(limit) => {
                    let gave_up = &GAVE_UP[self.stream.index()];
                    let left = limit.saturating_sub(now - self.started);
                    if gave_up.load(Relaxed) || left.is_zero() {
                        gave_up.store(true, Relaxed);
                        return Err(Error::new(
                            ErrorKind::TimedOut,
                            format!("its reader took nothing for {} s", limit.as_secs_f64()),
                        ));
                    }
                    left
                }
                Wait::UntilInterrupted => {
                    if crate::runner::interrupted() {
                        let at = *self.interrupted_at.get_or_insert(now);
                        if now - at >= AFTER_INTERRUPT {
                            return Err(Error::other("interrupted while its reader took nothing"));
                        }
                    }
                    POLL_SLICE
                }
            };
            let mut poll = libc::pollfd {
                fd,
                events: libc::POLLOUT,
                revents: 0,
            };
            let ms = left.min(POLL_SLICE).as_millis().max(1) as libc::c_int;
            // SAFETY: poll(2) on one pollfd this function owns.
            let ready = unsafe { libc::poll(&mut poll, 1, ms) };
            // Ready (POLLERR/POLLHUP too: the write says what is wrong).
            if ready > 0 {
                return Ok(());
            }
            if ready < 0 && Error::last_os_error().kind() != ErrorKind::Interrupted {
                return Err(Error::last_os_error());
            }
        }
    }
}
