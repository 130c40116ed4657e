//! Writes a trace's frame to a new file: header, blocks, trailer. The
//! capture's writer thread and the imports both write through it.

use std::io::Write;

use super::format::{Header, Trailer, BLOCK, END, MAGIC, VERSION};
use super::record::{self, BlockState, OpView};
use super::varint;

/// One client's encoded operations, ready to be framed.
pub struct Block {
    pub client: u32,
    pub count: u32,
    pub bytes: Vec<u8>,
}

/// A trace being written to `out`.
pub struct TraceWriter<W: Write> {
    out: W,
    operations: u64,
}

impl<W: Write> TraceWriter<W> {
    /// Writes the magic, the version and `header`.
    pub fn new(mut out: W, header: &Header) -> std::io::Result<Self> {
        out.write_all(MAGIC)?;
        out.write_all(&VERSION.to_le_bytes())?;
        let json = serde_json::to_vec(header).map_err(std::io::Error::other)?;
        write_json(&mut out, &json)?;
        Ok(Self { out, operations: 0 })
    }

    pub fn block(&mut self, block: &Block) -> std::io::Result<()> {
        if block.count == 0 {
            return Ok(());
        }
        let mut frame = vec![BLOCK];
        varint::put(&mut frame, u64::from(block.client));
        varint::put(&mut frame, u64::from(block.count));
        varint::put(&mut frame, block.bytes.len() as u64);
        self.out.write_all(&frame)?;
        self.out.write_all(&block.bytes)?;
        self.operations += u64::from(block.count);
        Ok(())
    }

    /// Writes the trailer; the stream is then complete.
    pub fn finish(mut self) -> std::io::Result<W> {
        let trailer = Trailer {
            operations: self.operations,
        };
        self.out.write_all(&[END])?;
        let json = serde_json::to_vec(&trailer).map_err(std::io::Error::other)?;
        write_json(&mut self.out, &json)?;
        self.out.flush()?;
        Ok(self.out)
    }

    pub fn operations(&self) -> u64 {
        self.operations
    }
}

fn write_json(out: &mut impl Write, json: &[u8]) -> std::io::Result<()> {
    let mut len = Vec::new();
    varint::put(&mut len, json.len() as u64);
    out.write_all(&len)?;
    out.write_all(json)
}

/// Encodes one client's operations into blocks of about `flush_at`
/// bytes: what a capturing client and an import fill.
pub struct BlockBuilder {
    client: u32,
    state: BlockState,
    bytes: Vec<u8>,
    count: u32,
    flush_at: usize,
}

impl BlockBuilder {
    pub fn new(client: u32, flush_at: usize) -> Self {
        Self {
            client,
            state: BlockState::new(),
            bytes: Vec::new(),
            count: 0,
            flush_at,
        }
    }

    /// Adds `op`; a full block is returned, to be written.
    #[inline]
    pub fn push(&mut self, op: &OpView<'_>) -> Option<Block> {
        record::encode(&mut self.state, op, &mut self.bytes);
        self.count += 1;
        (self.bytes.len() >= self.flush_at || self.count == u32::MAX).then(|| self.take())
    }

    /// Bytes encoded since the last block was taken.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The operations so far as a block (maybe empty), starting afresh.
    pub fn take(&mut self) -> Block {
        self.state = BlockState::new();
        // The next block grows as this one did (no reallocation in a
        // capture's hot path), or starts empty for a client that wrote little.
        let grown = if self.bytes.len() >= self.flush_at {
            self.flush_at + 1024
        } else {
            0
        };
        let bytes = std::mem::replace(&mut self.bytes, Vec::with_capacity(grown));
        Block {
            client: self.client,
            count: std::mem::take(&mut self.count),
            bytes,
        }
    }
}
