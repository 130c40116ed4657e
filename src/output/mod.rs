//! Output formats of a step ([`crate::results::StepOutput`]): YCSB's text,
//! db_bench's text, and JSON, one file each, the way hyperfine's exporters
//! work: formats read the typed output, measurements know nothing of formats.

pub mod dbbench_text;
pub mod json;
pub mod ycsb_text;

use std::io::Write;
use std::path::Path;

use anyhow::Context;

/// Output format of `kvperf load|run|merge`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// YCSB's text format: `[OVERALL], Throughput(ops/sec), ...`.
    Text,
    /// One JSON document: configuration, host facts, all figures and histograms.
    Json,
}

/// Milliseconds since the Unix epoch, for the `*_unix_ms` fields of results.
pub fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Writes `bytes` so that a crash leaves either the old file or the new one:
/// a temporary file in the same directory, fsync, rename, fsync the directory.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().context("output path has no file name")?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.with_context(|| format!("cannot write output file '{}'", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        write_atomically(&path, b"first").unwrap();
        write_atomically(&path, b"second").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "second");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
