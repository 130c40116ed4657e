//! `-p trace.output=FILE`: every operation of a load's or run's measured
//! window, written to a trace. Each client encodes into its own buffer
//! (a few varints per operation, no lock) and hands a full buffer (256
//! KiB) to one writer thread through a bounded channel; the file is
//! written beside its destination and renamed over it when the step ends.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;
use std::time::Instant;

use super::format::{Header, FLUSH_AT};
use super::output::{FileWriter, TraceFile};
use super::record::{OpType, OpView};
use super::writer::{Block, BlockBuilder};
use crate::engine::{OpResult, Record};
use crate::files::Destination;
use crate::measure::{Meter, Outcome};

/// Blocks in flight to the writer: a client waits when the disk is this
/// far behind, so memory stays bounded (64 x 256 KiB).
const IN_FLIGHT: usize = 64;

/// The property that asks for a trace.
pub const PROPERTY: &str = "trace.output";

type Written = std::io::Result<FileWriter>;

/// A trace being captured.
pub struct Capture {
    epoch: Instant,
    sender: Option<SyncSender<Block>>,
    writer: Option<JoinHandle<Written>>,
    /// Taken by `finish`.
    file: Option<TraceFile>,
}

impl Capture {
    /// Starts the writer; `header.epoch_unix_ns` is set to now, the
    /// trace's time 0.
    pub fn start(destination: Destination, mut header: Header) -> anyhow::Result<Self> {
        let epoch = Instant::now();
        header.epoch_unix_ns = crate::clock::unix_nanos();
        let (file, out) = TraceFile::create(destination, PROPERTY, &header)?;
        let (sender, blocks) = sync_channel(IN_FLIGHT);
        let writer = std::thread::Builder::new()
            .name("kvperf-trace".into())
            .spawn(move || write_blocks(out, blocks))?;
        Ok(Self {
            epoch,
            sender: Some(sender),
            writer: Some(writer),
            file: Some(file),
        })
    }

    /// Where the trace goes.
    pub fn path(&self) -> &std::path::Path {
        self.file.as_ref().expect("until finish").path()
    }

    /// The recorder of client `index`.
    pub fn client(&self, index: usize) -> ClientTrace {
        ClientTrace {
            builder: BlockBuilder::new(index as u32, FLUSH_AT),
            sender: self.sender.clone().expect("running until finish"),
            epoch: self.epoch,
            sizes: Vec::new(),
        }
    }

    /// Ends the trace once every client's recorder is dropped: the last
    /// blocks and the end record written, synced, put in place. The
    /// operations written.
    pub fn finish(mut self) -> anyhow::Result<u64> {
        let written = self.join()?;
        let file = self.file.take().expect("finished once");
        let out = written.map_err(|e| file.cannot(e))?;
        file.finish(out)
    }

    fn join(&mut self) -> anyhow::Result<Written> {
        drop(self.sender.take());
        self.writer
            .take()
            .expect("joined once")
            .join()
            .map_err(|_| anyhow::anyhow!("the trace writer panicked"))
    }
}

impl Drop for Capture {
    /// A capture that did not finish (the step failed before) leaves no
    /// temporary file (the [`TraceFile`]'s drop).
    fn drop(&mut self) {
        if self.writer.is_some() {
            let _ = self.join();
        }
    }
}

fn write_blocks(mut out: FileWriter, blocks: Receiver<Block>) -> Written {
    for block in blocks {
        out.block(&block)?;
    }
    Ok(out)
}

/// What a client knows of an operation it just did, for its trace.
pub struct Facts<'a> {
    pub op: OpType,
    pub result: &'a OpResult,
    pub key: &'a [u8],
    /// Reads and scans: fields asked for (0: all).
    pub read_fields: u32,
    pub scan_length: u32,
    /// Writes: the record written.
    pub written: Option<&'a Record>,
    pub bytes_read: u64,
}

/// One client's recorder: its own buffer, flushed to the writer when full.
pub struct ClientTrace {
    builder: BlockBuilder,
    sender: SyncSender<Block>,
    epoch: Instant,
    sizes: Vec<u32>,
}

impl ClientTrace {
    /// Records the operation `meter` just timed, if it was in the window.
    #[inline]
    pub fn record(&mut self, meter: &Meter, facts: Facts<'_>) {
        let Some(times) = meter.last_times.filter(|_| meter.recording) else {
            return;
        };
        let ns = |at: Instant| at.saturating_duration_since(self.epoch).as_nanos() as u64;
        self.sizes.clear();
        if let Some(record) = facts.written {
            self.sizes
                .extend(record.fields().map(|(_, v)| v.len() as u32));
        }
        let view = OpView {
            op: facts.op,
            outcome: Outcome::of(facts.result),
            intended_ns: ns(times.intended),
            start_ns: ns(times.start),
            end_ns: ns(times.end),
            key: facts.key,
            read_fields: facts.read_fields,
            scan_length: facts.scan_length,
            value_sizes: &self.sizes,
            bytes_read: facts.bytes_read,
        };
        if let Some(full) = self.builder.push(&view) {
            // A writer that failed is reported by `Capture::finish`.
            let _ = self.sender.send(full);
        }
    }
}

impl Drop for ClientTrace {
    fn drop(&mut self) {
        let _ = self.sender.send(self.builder.take());
    }
}
