//! One client's record operations written once, as async code, and the
//! workers made from them. A server engine with an async driver implements
//! [`ClientOps`] for its client; [`TaskWorker`] then serves a client task,
//! and [`ReadyWorker`] a client thread when the calls under the operations
//! never wait (a blocking connection whose calls are done when their
//! futures are made).

use std::future::Future;
use std::time::Duration;

use super::{run_now, AsyncEngineWorker, EngineWorker, OpFuture, OpResult, Record, ScanResults};

/// [`EngineWorker`]'s operations as futures, without the table (the
/// server engines keep one table per store).
pub trait ClientOps: Send {
    fn read<'a>(
        &'a mut self,
        key: &'a [u8],
        fields: Option<&'a [&'a str]>,
        out: &'a mut Record,
    ) -> impl Future<Output = OpResult> + Send + 'a;
    fn scan<'a>(
        &'a mut self,
        start_key: &'a [u8],
        count: usize,
        fields: Option<&'a [&'a str]>,
        out: &'a mut ScanResults,
    ) -> impl Future<Output = OpResult> + Send + 'a;
    fn update<'a>(
        &'a mut self,
        key: &'a [u8],
        values: &'a Record,
    ) -> impl Future<Output = OpResult> + Send + 'a;
    fn insert<'a>(
        &'a mut self,
        key: &'a [u8],
        values: &'a Record,
    ) -> impl Future<Output = OpResult> + Send + 'a;
    fn delete<'a>(&'a mut self, key: &'a [u8]) -> impl Future<Output = OpResult> + Send + 'a;
}

/// A client task's worker: its operations are the client's futures.
pub struct TaskWorker<C>(pub C);

impl<C: ClientOps> AsyncEngineWorker for TaskWorker<C> {
    fn read<'a>(
        &'a mut self,
        _table: &'a str,
        key: &'a [u8],
        fields: Option<&'a [&'a str]>,
        out: &'a mut Record,
    ) -> OpFuture<'a> {
        Box::pin(self.0.read(key, fields, out))
    }
    fn scan<'a>(
        &'a mut self,
        _table: &'a str,
        start_key: &'a [u8],
        count: usize,
        fields: Option<&'a [&'a str]>,
        out: &'a mut ScanResults,
    ) -> OpFuture<'a> {
        Box::pin(self.0.scan(start_key, count, fields, out))
    }
    fn update<'a>(
        &'a mut self,
        _table: &'a str,
        key: &'a [u8],
        values: &'a Record,
    ) -> OpFuture<'a> {
        Box::pin(self.0.update(key, values))
    }
    fn insert<'a>(
        &'a mut self,
        _table: &'a str,
        key: &'a [u8],
        values: &'a Record,
    ) -> OpFuture<'a> {
        Box::pin(self.0.insert(key, values))
    }
    fn delete<'a>(&'a mut self, _table: &'a str, key: &'a [u8]) -> OpFuture<'a> {
        Box::pin(self.0.delete(key))
    }
}

/// A client thread's worker over operations that never wait: each runs to
/// its end in one poll ([`run_now`]), blocking in the calls under it.
pub struct ReadyWorker<C>(pub C);

impl<C: ClientOps> EngineWorker for ReadyWorker<C> {
    fn read(&mut self, _: &str, key: &[u8], fields: Option<&[&str]>, out: &mut Record) -> OpResult {
        run_now(self.0.read(key, fields, out))
    }
    fn scan(
        &mut self,
        _: &str,
        start_key: &[u8],
        count: usize,
        fields: Option<&[&str]>,
        out: &mut ScanResults,
    ) -> OpResult {
        run_now(self.0.scan(start_key, count, fields, out))
    }
    fn update(&mut self, _: &str, key: &[u8], values: &Record) -> OpResult {
        run_now(self.0.update(key, values))
    }
    fn insert(&mut self, _: &str, key: &[u8], values: &Record) -> OpResult {
        run_now(self.0.insert(key, values))
    }
    fn delete(&mut self, _: &str, key: &[u8]) -> OpResult {
        run_now(self.0.delete(key))
    }
}

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
    fn reconnect_pauses_double_up_to_the_limit_and_reset_after_success() {
        let mut b = Backoff::default();
        let pauses: Vec<u64> = (0..10).map(|_| b.next_pause().as_millis() as u64).collect();
        assert_eq!(pauses, [0, 10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
        b.reset();
        assert_eq!(b.next_pause(), Duration::ZERO);
    }
}
