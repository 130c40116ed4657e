//! The engine calls the core workload makes, through either seam. The
//! workload's operations are written once, as async code over
//! [`EngineCalls`]: on a client task they await an [`AsyncEngineWorker`]
//! ([`Awaiting`]); on a client thread the calls block as before
//! ([`Blocking`]): each is made, and done, when its future is created, so
//! the operation never waits and one poll runs it to the end
//! ([`crate::engine::run_now`]).

use std::future::{ready, Future};
use std::time::{Duration, Instant};

use crate::engine::{AsyncEngineWorker, EngineWorker, OpResult, Record, ScanResults};

pub trait EngineCalls: Send {
    fn read<'c>(
        &'c mut self,
        table: &'c str,
        key: &'c [u8],
        fields: Option<&'c [&'c str]>,
        out: &'c mut Record,
    ) -> impl Future<Output = OpResult> + Send + 'c;
    fn scan<'c>(
        &'c mut self,
        table: &'c str,
        start_key: &'c [u8],
        count: usize,
        fields: Option<&'c [&'c str]>,
        out: &'c mut ScanResults,
    ) -> impl Future<Output = OpResult> + Send + 'c;
    fn update<'c>(
        &'c mut self,
        table: &'c str,
        key: &'c [u8],
        values: &'c Record,
    ) -> impl Future<Output = OpResult> + Send + 'c;
    fn insert<'c>(
        &'c mut self,
        table: &'c str,
        key: &'c [u8],
        values: &'c Record,
    ) -> impl Future<Output = OpResult> + Send + 'c;
    /// YCSB's pause before retrying an insert: a thread sleeps, a task
    /// waits without holding its worker thread.
    fn pause(&self, time: Duration) -> impl Future<Output = ()> + Send;
}

/// A client thread's blocking worker.
pub struct Blocking<'a>(pub Box<dyn EngineWorker + 'a>);

impl EngineCalls for Blocking<'_> {
    #[inline]
    fn read<'c>(
        &'c mut self,
        table: &'c str,
        key: &'c [u8],
        fields: Option<&'c [&'c str]>,
        out: &'c mut Record,
    ) -> impl Future<Output = OpResult> + Send + 'c {
        ready(self.0.read(table, key, fields, out))
    }
    #[inline]
    fn scan<'c>(
        &'c mut self,
        table: &'c str,
        start_key: &'c [u8],
        count: usize,
        fields: Option<&'c [&'c str]>,
        out: &'c mut ScanResults,
    ) -> impl Future<Output = OpResult> + Send + 'c {
        ready(self.0.scan(table, start_key, count, fields, out))
    }
    #[inline]
    fn update<'c>(
        &'c mut self,
        table: &'c str,
        key: &'c [u8],
        values: &'c Record,
    ) -> impl Future<Output = OpResult> + Send + 'c {
        ready(self.0.update(table, key, values))
    }
    #[inline]
    fn insert<'c>(
        &'c mut self,
        table: &'c str,
        key: &'c [u8],
        values: &'c Record,
    ) -> impl Future<Output = OpResult> + Send + 'c {
        ready(self.0.insert(table, key, values))
    }
    fn pause(&self, time: Duration) -> impl Future<Output = ()> + Send {
        std::thread::sleep(time);
        ready(())
    }
}

/// A client task's async worker.
pub struct Awaiting<'a>(pub Box<dyn AsyncEngineWorker + 'a>);

impl EngineCalls for Awaiting<'_> {
    fn read<'c>(
        &'c mut self,
        table: &'c str,
        key: &'c [u8],
        fields: Option<&'c [&'c str]>,
        out: &'c mut Record,
    ) -> impl Future<Output = OpResult> + Send + 'c {
        self.0.read(table, key, fields, out)
    }
    fn scan<'c>(
        &'c mut self,
        table: &'c str,
        start_key: &'c [u8],
        count: usize,
        fields: Option<&'c [&'c str]>,
        out: &'c mut ScanResults,
    ) -> impl Future<Output = OpResult> + Send + 'c {
        self.0.scan(table, start_key, count, fields, out)
    }
    fn update<'c>(
        &'c mut self,
        table: &'c str,
        key: &'c [u8],
        values: &'c Record,
    ) -> impl Future<Output = OpResult> + Send + 'c {
        self.0.update(table, key, values)
    }
    fn insert<'c>(
        &'c mut self,
        table: &'c str,
        key: &'c [u8],
        values: &'c Record,
    ) -> impl Future<Output = OpResult> + Send + 'c {
        self.0.insert(table, key, values)
    }
    fn pause(&self, time: Duration) -> impl Future<Output = ()> + Send {
        crate::runner::sleep_until(Instant::now() + time)
    }
}
