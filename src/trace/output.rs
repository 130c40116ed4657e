//! A trace file being written: beside its destination (a new file,
//! exclusive, through no link), then renamed over it once complete; a
//! trace that does not complete leaves nothing behind.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use super::format::Header;
use super::writer::TraceWriter;
use crate::error::InputError;
use crate::files::Destination;

pub type FileWriter = TraceWriter<BufWriter<File>>;

/// Checks `path` as a trace's destination (named by `flag`): as every
/// output file, except that `-`, which other commands' `--output` take for
/// standard output, is refused in one line rather than made a file named
/// `-`: a trace is binary and is put in place only once complete.
pub fn destination(path: &Path, flag: &str, inputs: &[&Path]) -> Result<Destination, InputError> {
    if path == Path::new("-") {
        return Err(InputError::Invalid(format!(
            "{flag} '-': a trace is binary and is written to a file (renamed into place once complete), never to standard output; give a file path"
        )));
    }
    Destination::check(path, flag, super::format::WRITTEN, inputs)
}

pub struct TraceFile {
    destination: Destination,
    /// The file being written; empty once put in place.
    tmp: PathBuf,
    /// The flag or property that named it, for errors.
    named_by: &'static str,
}

impl TraceFile {
    /// Starts the file with `header`; the writer takes the operations.
    pub fn create(
        destination: Destination,
        named_by: &'static str,
        header: &Header,
    ) -> anyhow::Result<(Self, FileWriter)> {
        let cannot = |e: std::io::Error| {
            anyhow::anyhow!(
                "cannot write {named_by} '{}': {e}",
                destination.path().display()
            )
        };
        let (tmp, file) = destination.temporary().map_err(cannot)?;
        let file_of = Self {
            destination,
            tmp,
            named_by,
        };
        let writer = TraceWriter::new(BufWriter::with_capacity(1 << 20, file), header)
            .map_err(|e| file_of.cannot(e))?;
        Ok((file_of, writer))
    }

    pub fn path(&self) -> &std::path::Path {
        self.destination.path()
    }

    /// Ends the trace (its end record), syncs it and puts it in place;
    /// the operations it holds.
    pub fn finish(mut self, writer: FileWriter) -> anyhow::Result<u64> {
        let operations = writer.operations();
        let synced = writer.finish().and_then(|out| {
            let file = out.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()
        });
        synced.map_err(|e| self.cannot(e))?;
        let placed = self.destination.put_in_place(&self.tmp);
        // Complete either way: kept where the error names it when it could
        // not be put in place (the drop removed it, though the error said
        // it was kept).
        self.tmp = PathBuf::new();
        placed.map(|()| operations)
    }

    /// A failed write: the writer's error, named.
    pub fn cannot(&self, e: std::io::Error) -> anyhow::Error {
        anyhow::anyhow!(
            "cannot write {} '{}': {e}",
            self.named_by,
            self.destination.path().display()
        )
    }
}

impl Drop for TraceFile {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            let _ = self.destination.remove_temporary(&self.tmp);
        }
    }
}
