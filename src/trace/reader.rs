//! Reads a trace file one block at a time. Every length is checked
//! against what the file still holds before anything is allocated, so a
//! truncated, wrong or hostile file is one line (InputError), never a
//! panic or a huge allocation.

use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use super::format::{Header, Trailer, BLOCK, END, MAGIC, MAX_BLOCK, MAX_JSON, VERSION};
use super::record::{self, BlockState, TraceOp};
use crate::error::InputError;

/// Bytes of one operation held in memory, besides its key and sizes.
const OP_BYTES: usize = std::mem::size_of::<TraceOp>();

/// What `op` holds in memory: itself, its key's and its sizes' buffers
/// and the allocator's overhead of each.
fn held_bytes(op: &TraceOp) -> u64 {
    (OP_BYTES + op.key.capacity() + 4 * op.value_sizes.capacity() + 32) as u64
}

/// The most a trace held whole may take: half of what the system has
/// available (`MemAvailable`), or of this process's address-space limit
/// when that is lower.
fn memory_budget() -> u64 {
    let available = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| crate::host::proc_number(&m, "MemAvailable:"))
        .map_or(u64::MAX, |kb| kb.saturating_mul(1024));
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    let address_space = match unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } {
        0 if limit.rlim_cur != libc::RLIM_INFINITY => limit.rlim_cur,
        _ => u64::MAX,
    };
    available.min(address_space) / 2
}

/// An open trace: its header, then its operations block by block.
pub struct TraceReader<R: Read> {
    path: PathBuf,
    input: BufReader<R>,
    /// Bytes of the file not yet read.
    left: u64,
    pub header: Header,
    /// Set once the trailer has been read.
    trailer: Option<Trailer>,
    operations: u64,
}

impl TraceReader<std::fs::File> {
    /// Opens `path` as a trace (a regular file; see `files::open_input`).
    pub fn open(path: &Path) -> Result<Self, InputError> {
        let (file, meta) = crate::files::open_input(path, "trace")?;
        Self::new(file, meta.len(), path)
    }
}

impl<R: Read> TraceReader<R> {
    /// Reads the magic, version and header of `input`, `len` bytes long.
    pub fn new(input: R, len: u64, path: &Path) -> Result<Self, InputError> {
        let mut reader = Self {
            path: path.to_path_buf(),
            input: BufReader::with_capacity(64 << 10, input),
            left: len,
            header: placeholder_header(),
            trailer: None,
            operations: 0,
        };
        if len == 0 {
            return Err(reader.bad("is empty"));
        }
        let mut magic = [0u8; MAGIC.len()];
        if len < MAGIC.len() as u64 + 2 || reader.exact(&mut magic).is_err() || magic != MAGIC {
            return Err(reader.bad(
                "is not a kvperf trace (no 'kvperf-file/1 trace' signature); import CSV traces with --from csv|twitter",
            ));
        }
        let mut version = [0u8; 2];
        reader.exact(&mut version)?;
        let version = u16::from_le_bytes(version);
        if version != VERSION {
            return Err(reader.bad(&format!(
                "is trace format version {version}; this kvperf reads version {VERSION}"
            )));
        }
        let json = reader.json("header")?;
        reader.header = serde_json::from_slice(&json)
            .map_err(|e| reader.bad(&format!("has a header that is not valid: {e}")))?;
        Ok(reader)
    }

    /// The next block's operations; None after the trailer. A file that
    /// ends without one is truncated (the capture did not finish).
    pub fn next_block(&mut self) -> Result<Option<Vec<TraceOp>>, InputError> {
        if self.trailer.is_some() {
            return Ok(None);
        }
        let mut tag = [0u8];
        if self.left == 0 {
            return Err(self.bad(&format!(
                "is truncated after {} operations: it has no end record (the capture did not finish)",
                self.operations
            )));
        }
        self.exact(&mut tag)?;
        match tag[0] {
            BLOCK => self.block().map(Some),
            END => {
                let json = self.json("end record")?;
                let trailer: Trailer = serde_json::from_slice(&json)
                    .map_err(|e| self.bad(&format!("has an end record that is not valid: {e}")))?;
                if trailer.operations != self.operations {
                    return Err(self.bad(&format!(
                        "says it holds {} operations but holds {}",
                        trailer.operations, self.operations
                    )));
                }
                if self.left != 0 {
                    return Err(self.bad(&format!("has {} bytes after its end record", self.left)));
                }
                self.trailer = Some(trailer);
                Ok(None)
            }
            other => Err(self.bad(&format!(
                "has an unknown record tag {other:#04x} after {} operations",
                self.operations
            ))),
        }
    }

    /// Every remaining operation, in file order (block by block), within
    /// [`memory_budget`]: a trace held whole (a replay's schedule, a fit)
    /// takes about 15 times its file's size, and one of a billion
    /// operations grew until the kernel killed kvperf, with no word.
    pub fn read_all(mut self) -> Result<(Header, Vec<TraceOp>), InputError> {
        let budget = memory_budget();
        let mut all: Vec<TraceOp> = Vec::new();
        let mut held = 0u64;
        while let Some(block) = self.next_block()? {
            held += block.iter().map(held_bytes).sum::<u64>();
            // The vector's own doubling: its capacity, not its length.
            let total = held + (all.capacity().max(all.len() + block.len()) * OP_BYTES) as u64;
            if total > budget {
                return Err(self.bad(&format!(
                    "needs more memory than kvperf may take to hold it whole (over {} MiB after {} operations; at most half the memory available, {} MiB): replay or fit a part of it",
                    total >> 20,
                    all.len() + block.len(),
                    budget >> 20
                )));
            }
            all.extend(block);
        }
        Ok((self.header, all))
    }

    fn block(&mut self) -> Result<Vec<TraceOp>, InputError> {
        let client = self.varint("a block's client")?;
        let count = self.varint("a block's count")?;
        let len = self.varint("a block's length")?;
        if client > u64::from(u32::MAX) {
            return Err(self.bad(&format!("has a block of client {client}")));
        }
        if len > MAX_BLOCK || len > self.left {
            return Err(self.bad(&format!(
                "has a block of {len} bytes where {} remain (at most {MAX_BLOCK}): it is truncated or not a trace",
                self.left
            )));
        }
        // An operation takes 7 bytes at least.
        if count == 0 || count > len / 7 {
            return Err(self.bad(&format!("has a block of {count} operations in {len} bytes")));
        }
        let mut bytes = vec![0u8; len as usize];
        self.exact(&mut bytes)?;
        let mut ops = Vec::with_capacity(count as usize);
        let mut state = BlockState::new();
        let mut rest = bytes.as_slice();
        for _ in 0..count {
            let op = record::decode(&mut state, client as u32, &mut rest).map_err(|why| {
                self.bad(&format!(
                    "has a bad operation after {}: {why}",
                    self.operations + ops.len() as u64
                ))
            })?;
            ops.push(op);
        }
        if !rest.is_empty() {
            return Err(self.bad(&format!(
                "has a block with {} bytes past its {count} operations",
                rest.len()
            )));
        }
        self.operations += count;
        Ok(ops)
    }

    fn json(&mut self, what: &str) -> Result<Vec<u8>, InputError> {
        let len = self.varint(what)?;
        if len > MAX_JSON || len > self.left {
            return Err(self.bad(&format!(
                "has a {what} of {len} bytes where {} remain (at most {MAX_JSON})",
                self.left
            )));
        }
        let mut json = vec![0u8; len as usize];
        self.exact(&mut json)?;
        Ok(json)
    }

    fn varint(&mut self, what: &str) -> Result<u64, InputError> {
        let mut value = 0u64;
        for i in 0..10 {
            let mut b = [0u8];
            self.exact(&mut b)
                .map_err(|_| self.bad(&format!("is truncated inside {what}")))?;
            if i == 9 && b[0] > 1 {
                break;
            }
            value |= u64::from(b[0] & 0x7f) << (7 * i);
            if b[0] & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.bad(&format!("has {what} longer than 64 bits")))
    }

    fn exact(&mut self, buf: &mut [u8]) -> Result<(), InputError> {
        if (buf.len() as u64) > self.left {
            return Err(self.bad(&format!(
                "is truncated after {} operations",
                self.operations
            )));
        }
        self.input
            .read_exact(buf)
            .map_err(|e| self.bad(&format!("cannot be read: {e}")))?;
        self.left -= buf.len() as u64;
        Ok(())
    }

    fn bad(&self, why: &str) -> InputError {
        InputError::Invalid(format!("trace '{}' {why}", self.path.display()))
    }
}

fn placeholder_header() -> Header {
    Header {
        source: String::new(),
        kvperf: String::new(),
        engine: None,
        table: String::new(),
        epoch_unix_ns: 0,
        clients: 0,
        paced: false,
        target_ops_per_sec: 0.0,
        settings: Default::default(),
    }
}

/// Reads a whole trace file: its header and operations in file order.
pub fn read_trace(path: &Path) -> Result<(Header, Vec<TraceOp>), InputError> {
    TraceReader::open(path)?.read_all()
}
