//! Reaching a server again: a bounded connect, and the pauses between
//! one client's reconnect attempts.

use std::time::Duration;

/// `connect` run on a thread of its own, waited for at most `limit`; `None`
/// when time is up. A blocking driver's timeouts bound each read, not a
/// whole handshake of several; the thread ends when its driver gives up.
pub fn within<T: Send + 'static>(
    limit: Duration,
    connect: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(connect()));
    rx.recv_timeout(limit).ok()
}

/// [`within`], saying once (`say`, on this thread) that the call is still
/// waiting when it has not ended after [`SAY_WAIT_AFTER`]: a connection's
/// handshake waits out `stalltimeout`, and a user at a silent port learns
/// why nothing happens long before that.
pub fn within_saying<T: Send + 'static>(
    limit: Duration,
    say: impl FnOnce(),
    connect: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(connect()));
    if limit > SAY_WAIT_AFTER {
        match rx.recv_timeout(SAY_WAIT_AFTER) {
            Ok(done) => return Some(done),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => say(),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return None,
        }
        return rx.recv_timeout(limit - SAY_WAIT_AFTER).ok();
    }
    rx.recv_timeout(limit).ok()
}

/// When a connection still waiting for its server's first answer is said.
pub const SAY_WAIT_AFTER: Duration = Duration::from_secs(5);

/// How long a connection's handshake (connecting, the start-up or first
/// reply) may wait: `stalltimeout` ([`wait_limit`]), as every call to a
/// server before the window; a server that stopped answering and a port
/// where something silent listens look alike on the wire, so neither is
/// given up on sooner. Without a bound (`stalltimeout=0`), 10^9 s.
pub fn handshake_limit(props: &crate::properties::Properties) -> Duration {
    wait_limit(props).unwrap_or(Duration::from_secs(1_000_000_000))
}

/// The one line of a connection whose handshake had no answer within
/// `limit` ([`handshake_limit`]): a run failure, naming the server, the
/// wait and both things it may be.
pub fn no_answer(server: &str, addr: &str, waited_for: &str, limit: Duration) -> anyhow::Error {
    anyhow::anyhow!(
        "{server} at {addr} did not answer within {} s while kvperf waited for {waited_for}: it stopped answering, or what listens there is not {server} (stalltimeout={})",
        limit.as_secs_f64(),
        limit.as_secs_f64()
    )
}

/// Said once on stderr when a connection has waited [`SAY_WAIT_AFTER`].
pub fn say_still_waiting(server: &str, addr: &str, limit: Duration) {
    eprintln!(
        "kvperf: {server} at {addr} has not answered kvperf's connection for {} s; waiting up to stalltimeout={} s (is the server stopped, or is what listens there not {server}?)",
        SAY_WAIT_AFTER.as_secs(),
        limit.as_secs_f64()
    );
}

/// How long a call of an engine's own to its server (opening, schema
/// checks, the footprint and events queries, closing) may wait in all:
/// `stalltimeout` as the client reads it (seconds, or a duration such as
/// `30s`; default 300 s; 0 = no bound). A value the client refuses is
/// refused before an engine opens; here it is the default.
pub fn wait_limit(props: &crate::properties::Properties) -> Option<Duration> {
    const DEFAULT: f64 = 300.0;
    let text = props.get("stalltimeout").unwrap_or("300").trim();
    let seconds = match text.parse::<f64>() {
        Ok(s) => s,
        Err(_) => crate::units::parse_duration(text).map_or(DEFAULT, |d| d.as_secs_f64()),
    };
    (seconds.is_finite() && seconds > 0.0).then(|| Duration::from_secs_f64(seconds.min(1e9)))
}

/// The first pause between one client's reconnect attempts, doubled after
/// each failed one up to [`RECONNECT_MAX_PAUSE`]: a server that is down is
/// tried a few times a second per client, not once per operation.
pub const RECONNECT_FIRST_PAUSE: Duration = Duration::from_millis(10);
pub const RECONNECT_MAX_PAUSE: Duration = Duration::from_secs(1);

/// How long a client waits before its next reconnect attempt. The first
/// attempt after a lost connection is at once (a restarted server is back
/// soon); a successful operation starts the sequence again.
#[derive(Debug, Default)]
pub struct Backoff {
    pause: Duration,
}

impl Backoff {
    /// The pause to take before this reconnect attempt; the next one waits longer.
    pub fn next_pause(&mut self) -> Duration {
        let pause = self.pause;
        self.pause = (pause * 2).clamp(RECONNECT_FIRST_PAUSE, RECONNECT_MAX_PAUSE);
        pause
    }

    pub fn reset(&mut self) {
        self.pause = Duration::ZERO;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_limit_is_stalltimeout() {
        let mut p = crate::properties::Properties::new();
        assert_eq!(wait_limit(&p), Some(Duration::from_secs(300)));
        p.set("stalltimeout", "2.5");
        assert_eq!(wait_limit(&p), Some(Duration::from_millis(2500)));
        p.set("stalltimeout", "1m");
        assert_eq!(wait_limit(&p), Some(Duration::from_secs(60)));
        p.set("stalltimeout", "0");
        assert_eq!(wait_limit(&p), None);
    }

    #[test]
    fn reconnect_pauses_double_up_to_the_limit_and_reset_after_success() {
        let mut b = Backoff::default();
        let pauses: Vec<u64> = (0..10).map(|_| b.next_pause().as_millis() as u64).collect();
        assert_eq!(pauses, [0, 10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
        b.reset();
        assert_eq!(b.next_pause(), Duration::ZERO);
    }
}
