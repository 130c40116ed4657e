//! Raw key-value access for db_bench-style benchmarks (`kvperf bench`):
//! keys and values are stored exactly as given, without YCSB's record
//! encoding, so kvperf's bytes on disk match db_bench's.

use super::{OpError, OpResult};

/// A per-thread handle that may borrow its engine (a RocksDB iterator
/// borrows the database). It also owns one cursor, created on the first
/// `seek`, for ordered reads (`readseq`, `seekrandom`).
pub trait KvWorker: Send {
    /// Reads `key` and returns its value's length, without copying the
    /// value out (db_bench reads into a pinned slice); `NotFound` when absent.
    fn get(&mut self, key: &[u8]) -> Result<usize, OpError>;
    fn put(&mut self, key: &[u8], value: &[u8]) -> OpResult;
    fn delete(&mut self, key: &[u8]) -> OpResult;
    /// Positions the cursor at the first key ≥ `target` (the first key of
    /// all when `None`); returns whether it points at an entry.
    /// `fresh` drops the old cursor first, so it sees the latest writes.
    fn seek(&mut self, target: Option<&[u8]>, fresh: bool) -> Result<bool, OpError>;
    /// Moves the cursor on; returns whether it points at an entry.
    fn next(&mut self) -> Result<bool, OpError>;
    /// The entry under the cursor.
    fn current(&self) -> Option<(&[u8], &[u8])>;
}
