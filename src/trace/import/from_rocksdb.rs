//! `kvperf trace import --from rocksdb`: RocksDB's query trace
//! ([`super::rocksdb`]) as kvperf operations, one client, times from the
//! first query's:
//!
//! - Get, and each key of a MultiGet: READ (RocksDB's trace does not say
//!   what a Get returned: the size read is the last value written in the
//!   trace so far, else 100 bytes, so a replay loads keys with that size);
//! - a write batch's Put: INSERT of a key the trace has not used yet, else
//!   UPDATE; Merge: UPDATE; Delete and SingleDelete: DELETE; range
//!   deletions, blob indexes, wide-column entities and transaction markers
//!   are counted and left out;
//! - iterator Seek and SeekForPrev: SCAN of 1 record (the trace records
//!   the seek, not the Next calls after it);
//! - a key of column family N other than the default (0) gets the prefix
//!   `cfN/`: kvperf replays into one table.

use std::collections::HashSet;
use std::path::Path;

use super::rocksdb::{BatchEntry, CfKey, Query, RocksTrace};
use crate::error::InputError;
use crate::files::Destination;
use crate::measure::Outcome;
use crate::trace::format::Header;
use crate::trace::output::TraceFile;
use crate::trace::record::{OpView, MAX_KEY};
use crate::trace::writer::BlockBuilder;
use crate::trace::OpType;

/// What a RocksDB trace held, by RocksDB's query kinds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RocksCounts {
    pub gets: u64,
    pub writes: u64,
    pub puts: u64,
    pub merges: u64,
    pub deletes: u64,
    pub other_entries: u64,
    pub seeks: u64,
    pub multigets: u64,
    pub multiget_keys: u64,
    pub operations: u64,
}

impl RocksCounts {
    /// One line: what the trace held and what became of it.
    pub fn summary(&self) -> String {
        format!(
            "{} Get, {} write batches ({} Put, {} Merge, {} Delete, {} other entries left out), {} iterator seeks, {} MultiGet ({} keys)",
            self.gets,
            self.writes,
            self.puts,
            self.merges,
            self.deletes,
            self.other_entries,
            self.seeks,
            self.multigets,
            self.multiget_keys
        )
    }
}

/// Default size of a read before any value was written in the trace.
const FIRST_READ_SIZE: u64 = 100;
const FLUSH_AT: usize = 256 << 10;

/// Imports the RocksDB trace `input` into `destination`.
pub fn import(input: &Path, destination: Destination) -> anyhow::Result<RocksCounts> {
    let what = "RocksDB trace";
    let (file, meta) = crate::files::open_input(input, what)?;
    let name = input.display().to_string();
    let mut trace = RocksTrace::open(std::io::BufReader::new(file), meta.len())
        .map_err(|e| InputError::Invalid(format!("{what} '{name}' {e}")))?;
    let header = Header {
        source: "rocksdb".into(),
        kvperf: format!(
            "{} ({})",
            env!("CARGO_PKG_VERSION"),
            env!("KVPERF_GIT_COMMIT")
        ),
        engine: Some("rocksdb".into()),
        table: "usertable".into(),
        epoch_unix_ns: 0,
        clients: 1,
        // A query's timestamp is when it was issued.
        paced: true,
        target_ops_per_sec: 0.0,
        settings: Default::default(),
    };
    let (file, mut out) = TraceFile::create(destination, "--output", &header)?;
    let mut state = Converter {
        builder: BlockBuilder::new(0, FLUSH_AT),
        seen: HashSet::new(),
        last_size: FIRST_READ_SIZE,
        first_us: None,
        counts: RocksCounts::default(),
    };
    let mut n = 0u64;
    loop {
        let next = trace
            .next_query()
            .map_err(|e| InputError::Invalid(format!("{what} '{name}' {e}")))?;
        let Some((ts, query)) = next else { break };
        n += 1;
        if n.is_multiple_of(4096) {
            super::stop_if_interrupted("query", n, input)?;
        }
        let blocks = state.add(ts, query).map_err(InputError::Invalid)?;
        for block in blocks {
            out.block(&block).map_err(|e| file.cannot(e))?;
        }
    }
    if state.counts.operations == 0 {
        return Err(InputError::Invalid(format!("{what} '{name}' holds no queries")).into());
    }
    super::stop_if_interrupted("query", n, input)?;
    out.block(&state.builder.take())
        .map_err(|e| file.cannot(e))?;
    file.finish(out)?;
    Ok(state.counts)
}

struct Converter {
    builder: BlockBuilder,
    seen: HashSet<Vec<u8>>,
    last_size: u64,
    first_us: Option<u64>,
    counts: RocksCounts,
}

impl Converter {
    /// Adds a query's operations; the blocks it filled.
    fn add(&mut self, ts: u64, query: Query) -> Result<Vec<crate::trace::writer::Block>, String> {
        let first = *self.first_us.get_or_insert(ts);
        let at = ts.saturating_sub(first).saturating_mul(1000);
        let mut ops: Vec<(OpType, Vec<u8>, Option<u32>)> = Vec::new();
        let c = &mut self.counts;
        match query {
            Query::Get(k) => {
                c.gets += 1;
                ops.push((OpType::Read, key_of(k), None));
            }
            Query::MultiGet(keys) => {
                c.multigets += 1;
                c.multiget_keys += keys.len() as u64;
                ops.extend(keys.into_iter().map(|k| (OpType::Read, key_of(k), None)));
            }
            Query::Seek { at, .. } => {
                c.seeks += 1;
                ops.push((OpType::Scan, key_of(at), None));
            }
            Query::Write(entries) => {
                c.writes += 1;
                for entry in entries {
                    match entry {
                        BatchEntry::Put { at, value_len } => {
                            c.puts += 1;
                            ops.push((OpType::Update, key_of(at), Some(value_len)));
                        }
                        BatchEntry::Merge { at, value_len } => {
                            c.merges += 1;
                            ops.push((OpType::Update, key_of(at), Some(value_len)));
                        }
                        BatchEntry::Delete(at) => {
                            c.deletes += 1;
                            ops.push((OpType::Delete, key_of(at), None));
                        }
                        BatchEntry::Other => c.other_entries += 1,
                    }
                }
            }
        }
        let mut blocks = Vec::new();
        for (op, key, size) in ops {
            if key.len() > MAX_KEY {
                return Err(format!("a key longer than {MAX_KEY} bytes"));
            }
            let first_use = self.seen.insert(key.clone());
            // A Put of a key the trace has not used yet creates it.
            let op = match (op, size) {
                (OpType::Update, Some(_)) if first_use => OpType::Insert,
                _ => op,
            };
            let sizes: Vec<u32> = size.into_iter().collect();
            if let Some(s) = size {
                self.last_size = u64::from(s);
            }
            let view = OpView {
                op,
                outcome: Outcome::Ok,
                intended_ns: at,
                start_ns: at,
                end_ns: at,
                key: &key,
                read_fields: 0,
                scan_length: u32::from(op == OpType::Scan),
                value_sizes: &sizes,
                bytes_read: if op == OpType::Read {
                    self.last_size
                } else {
                    0
                },
            };
            self.counts.operations += 1;
            if let Some(block) = self.builder.push(&view) {
                blocks.push(block);
            }
        }
        Ok(blocks)
    }
}

/// The key kvperf replays: prefixed `cfN/` outside the default family.
fn key_of(k: CfKey) -> Vec<u8> {
    match k.cf {
        0 => k.key,
        cf => [format!("cf{cf}/").into_bytes(), k.key].concat(),
    }
}
