//! One client's record operations written once, as async code, and the
//! workers made from them. A server engine with an async driver implements
//! [`ClientOps`] for its client; [`TaskWorker`] then serves a client task,
//! and [`ReadyWorker`] a client thread when the calls under the operations
//! never wait (a blocking connection whose calls are done when their
//! futures are made).

use std::future::Future;

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
