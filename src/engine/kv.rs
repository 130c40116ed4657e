//! A cursor for raw key-value access (db_bench's `readseq`, `seekrandom`)
//! on engines that cannot keep one open between calls. Raw operations
//! ([`super::Operations::get`] and the rest) store keys and values exactly
//! as given, without YCSB's record encoding, so kvperf's bytes on disk
//! match db_bench's.

use super::OpError;

/// The db_bench cursor of an engine that cannot keep a cursor open between
/// calls (a read transaction, a SQL statement): entries copied out of one
/// read, in batches that double up to [`KvBatch::LARGEST_FILL`], and the
/// key the next batch starts after.
pub struct KvBatch {
    data: Vec<u8>,
    /// Per entry: where its key starts, where its value starts, where it ends.
    spans: Vec<(usize, usize, usize)>,
    pos: usize,
    /// The last fill found fewer entries than it asked for: the end.
    at_end: bool,
    /// Entries the next fill asks for.
    next_fill: usize,
    /// The key the next fill starts after.
    resume: Vec<u8>,
}

impl Default for KvBatch {
    fn default() -> Self {
        Self {
            data: Vec::new(),
            spans: Vec::new(),
            pos: 0,
            at_end: true,
            next_fill: 1,
            resume: Vec::new(),
        }
    }
}

impl KvBatch {
    pub const LARGEST_FILL: usize = 1024;

    /// Forgets the entries (keeping the buffers) for a new seek.
    pub fn reset(&mut self) {
        self.data.clear();
        self.spans.clear();
        self.resume.clear();
        self.pos = 0;
        self.at_end = true;
        self.next_fill = 1;
    }

    /// Starts a fill; returns how many entries it should ask for.
    pub fn start_fill(&mut self) -> usize {
        self.data.clear();
        self.spans.clear();
        self.pos = 0;
        let n = self.next_fill;
        self.next_fill = (n * 2).clamp(16, Self::LARGEST_FILL);
        n
    }

    pub fn push(&mut self, key: &[u8], value: &[u8]) {
        let start = self.data.len();
        self.data.extend_from_slice(key);
        let value_start = self.data.len();
        self.data.extend_from_slice(value);
        self.spans.push((start, value_start, self.data.len()));
    }

    /// Ends a fill that asked for `asked` entries; returns whether the
    /// cursor points at an entry.
    pub fn end_fill(&mut self, asked: usize) -> bool {
        self.at_end = self.spans.len() < asked;
        if let Some(&(start, value_start, _)) = self.spans.last() {
            self.resume.clear();
            self.resume
                .extend_from_slice(&self.data[start..value_start]);
        }
        self.current().is_some()
    }

    pub fn current(&self) -> Option<(&[u8], &[u8])> {
        let &(start, value_start, end) = self.spans.get(self.pos)?;
        Some((&self.data[start..value_start], &self.data[value_start..end]))
    }

    /// Steps within the batch; false when it is used up.
    fn step(&mut self) -> bool {
        if self.pos < self.spans.len() {
            self.pos += 1;
        }
        self.pos < self.spans.len()
    }
}

/// Where a batch of a refilled cursor starts (`blocking_raw!(.., refilled)`).
pub enum Start<'k> {
    First,
    AtOrAfter(&'k [u8]),
    After(&'k [u8]),
}

/// [`super::Operations::next`] for a client whose cursor is the [`KvBatch`] that
/// `batch` returns: the next entry of the batch, else the next batch, which
/// `refill` reads starting after the key it is given.
pub fn next_entry<W>(
    worker: &mut W,
    batch: impl Fn(&mut W) -> &mut KvBatch,
    refill: impl FnOnce(&mut W, &[u8]) -> Result<bool, OpError>,
) -> Result<bool, OpError> {
    let cursor = batch(worker);
    if cursor.step() {
        return Ok(true);
    }
    if cursor.at_end {
        return Ok(false);
    }
    let resume = std::mem::take(&mut cursor.resume);
    let found = refill(worker, &resume);
    let cursor = batch(worker);
    if cursor.resume.is_empty() {
        cursor.resume = resume;
    }
    found
}
