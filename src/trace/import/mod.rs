//! `kvperf trace import`: another tool's trace (a CSV layout, see
//! [`layouts`]) read line by line (each line at most [`MAX_LINE`] bytes)
//! and written as a kvperf trace, one block per client, with the times
//! as intended starts (the trace's schedule) from its first line.

pub mod from_rocksdb;
pub mod layouts;
pub mod rocksdb;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

pub use layouts::Layout;

use super::format::Header;
use super::output::{FileWriter, TraceFile};
use super::record::{OpView, MAX_KEY, MAX_SCAN, MAX_VALUE};
use super::writer::BlockBuilder;
use super::OpType;
use crate::error::InputError;
use crate::files::Destination;
use crate::measure::Outcome;

/// The longest line read.
pub const MAX_LINE: u64 = 1 << 20;
/// Block size of an imported client (many clients, each small).
const FLUSH_AT: usize = 16 << 10;
/// Bytes buffered across clients before every client's block is written.
const BUFFERED: usize = 32 << 20;

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    pub operations: u64,
    pub clients: u32,
    /// Lines whose time was before the first line's: put at time 0.
    pub before_first: u64,
}

/// Imports `input` (in `layout`) into the trace `destination`.
pub fn import(input: &Path, layout: Layout, destination: Destination) -> anyhow::Result<Imported> {
    let what = format!("{} trace", layout.name());
    let (file, meta) = crate::files::open_input(input, &what)?;
    if meta.len() == 0 {
        return Err(InputError::Invalid(format!("{what} '{}' is empty", input.display())).into());
    }
    let header = Header {
        source: layout.name().into(),
        kvperf: format!(
            "{} ({})",
            env!("CARGO_PKG_VERSION"),
            env!("KVPERF_GIT_COMMIT")
        ),
        engine: None,
        table: "usertable".into(),
        epoch_unix_ns: 0,
        clients: 0,
        // The trace's times are when each operation was to be issued.
        paced: true,
        target_ops_per_sec: 0.0,
        settings: Default::default(),
    };
    let (trace, mut out) = TraceFile::create(destination, "--output", &header)?;
    let mut state = Importer::default();
    let bad = |n: u64, why: String| {
        InputError::Invalid(format!("{what} '{}' line {n}: {why}", input.display()))
    };
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut buf = Vec::new();
    let mut n = 0u64;
    loop {
        buf.clear();
        let read = (&mut reader)
            .take(MAX_LINE + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| bad(n + 1, format!("cannot be read: {e}")))?;
        if read == 0 {
            break;
        }
        n += 1;
        if n.is_multiple_of(4096) {
            stop_if_interrupted("line", n, input)?;
        }
        if buf.last() != Some(&b'\n') && read as u64 > MAX_LINE {
            return Err(bad(n, format!("longer than {MAX_LINE} bytes")).into());
        }
        let text = std::str::from_utf8(&buf).map_err(|_| bad(n, "not UTF-8 text".into()))?;
        let text = text.trim_end_matches(['\n', '\r']);
        if text.trim().is_empty() || text.starts_with('#') {
            continue;
        }
        let Some(line) = layout.parse(text).map_err(|why| bad(n, why))? else {
            continue;
        };
        state.add(&line, &mut out).map_err(|e| match e {
            Failure::Input(why) => anyhow::Error::from(bad(n, why)),
            Failure::Io(e) => trace.cannot(e),
        })?;
    }
    if state.operations == 0 {
        return Err(InputError::Invalid(format!(
            "{what} '{}' holds no operations",
            input.display()
        ))
        .into());
    }
    // A signal in the last lines (or in a short input) is answered too:
    // nothing is put in place after it.
    stop_if_interrupted("line", n, input)?;
    state.flush_all(&mut out).map_err(|e| trace.cannot(e))?;
    let operations = trace.finish(out)?;
    Ok(Imported {
        operations,
        clients: state.clients.len() as u32,
        before_first: state.before_first,
    })
}

/// The import's error once SIGINT, SIGTERM or SIGHUP came, at `unit` `n`
/// ("line 4096") of `input` (its temporary is removed as the writer is
/// dropped).
fn stop_if_interrupted(unit: &str, n: u64, input: &Path) -> anyhow::Result<()> {
    if crate::runner::interrupted() {
        return Err(anyhow::anyhow!(
            "interrupted at {unit} {n} of '{}'; nothing was written to --output",
            input.display()
        ));
    }
    Ok(())
}

enum Failure {
    Input(String),
    Io(std::io::Error),
}

#[derive(Default)]
struct Importer {
    first_ns: Option<u64>,
    clients: HashMap<String, BlockBuilder>,
    buffered: usize,
    operations: u64,
    before_first: u64,
    sizes: Vec<u32>,
}

impl Importer {
    fn add(&mut self, line: &layouts::Line<'_>, out: &mut FileWriter) -> Result<(), Failure> {
        if line.key.len() > MAX_KEY {
            return Err(Failure::Input(format!("a key longer than {MAX_KEY} bytes")));
        }
        let most = if line.op == OpType::Scan {
            MAX_SCAN
        } else {
            MAX_VALUE
        };
        if line.size > most {
            return Err(Failure::Input(format!(
                "size {} is more than kvperf allows ({most})",
                line.size
            )));
        }
        let ns = (line.time_s * 1e9) as u64;
        let first = *self.first_ns.get_or_insert(ns);
        if ns < first {
            self.before_first += 1;
        }
        let at = ns.saturating_sub(first);
        self.sizes.clear();
        if line.op.writes() {
            self.sizes.push(line.size as u32);
        }
        let next_index = self.clients.len() as u32;
        let builder = match self.clients.get_mut(line.client) {
            Some(b) => b,
            None => self
                .clients
                .entry(line.client.to_string())
                .or_insert_with(|| BlockBuilder::new(next_index, FLUSH_AT)),
        };
        let op = OpView {
            op: line.op,
            outcome: Outcome::Ok,
            intended_ns: at,
            start_ns: at,
            end_ns: at,
            key: line.key.as_bytes(),
            read_fields: 0,
            scan_length: if line.op == OpType::Scan {
                line.size as u32
            } else {
                0
            },
            value_sizes: &self.sizes,
            bytes_read: if line.op.reads() && line.op != OpType::Scan {
                line.size
            } else {
                0
            },
        };
        let before = builder.len();
        let full = builder.push(&op);
        self.operations += 1;
        match full {
            Some(block) => {
                self.buffered -= before;
                out.block(&block).map_err(Failure::Io)?;
            }
            None => self.buffered += builder.len() - before,
        }
        if self.buffered > BUFFERED {
            self.flush_all(out).map_err(Failure::Io)?;
        }
        Ok(())
    }

    fn flush_all(&mut self, out: &mut FileWriter) -> std::io::Result<()> {
        for builder in self.clients.values_mut() {
            out.block(&builder.take())?;
        }
        self.buffered = 0;
        Ok(())
    }
}
