//! The results store: one JSON object per line, appended and fsynced as
//! each step finishes, so a crash or `kill -9` loses at most the step in
//! progress. A line cut short by a crash is the only damage possible; it is
//! dropped (and reported) before the next append, never half-parsed.

pub mod merge;
mod record;
pub mod step;

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;

pub use record::{PlanId, Record, StepId, FORMAT};
pub use step::{Measurement, StepOutput};

use crate::error::InputError;

/// Finished records read from a results file.
#[derive(Debug, Default)]
pub struct Loaded {
    pub records: Vec<Record>,
    /// Bytes of an incomplete last line (a write interrupted by a crash).
    pub torn_tail: usize,
    /// Length of the file up to the last complete line.
    pub complete_len: u64,
}

/// Reads every complete line of `path`; a missing file is empty.
pub fn read(path: &Path) -> anyhow::Result<Loaded> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Loaded::default()),
        Err(e) => {
            return Err(InputError::Invalid(format!(
                "cannot read results file '{}': {e}",
                path.display()
            ))
            .into())
        }
    };
    let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut records = Vec::new();
    for (index, line) in bytes[..complete].split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let at = || format!("results file '{}' line {}", path.display(), index + 1);
        records.push(parse_line(line).map_err(|e| InputError::Invalid(format!("{}: {e}", at())))?);
    }
    Ok(Loaded {
        records,
        torn_tail: bytes.len() - complete,
        complete_len: complete as u64,
    })
}

/// The records of `path`: a results file of `kvperf plan run`, or one
/// step's output (`kvperf load|run|merge --format json`), which becomes a
/// record of its own named after the file (see [`Record::of_step`]).
pub fn read_records(path: &Path) -> anyhow::Result<Vec<Record>> {
    #[derive(serde::Deserialize)]
    struct Version {
        kvperf_step: Option<u32>,
    }
    if let Ok(text) = std::fs::read_to_string(path) {
        // A step's output is one JSON document; a results file is lines.
        if let Ok(Version {
            kvperf_step: Some(_),
        }) = serde_json::from_str(&text)
        {
            let output = StepOutput::from_json(&text)
                .map_err(|e| InputError::Invalid(format!("'{}': {e}", path.display())))?;
            let name = path
                .file_stem()
                .map_or_else(|| "result".into(), |s| s.to_string_lossy().into_owned());
            return Ok(vec![Record::of_step(output, &name)]);
        }
    }
    Ok(read(path)?.records)
}

/// One line: its format version first, so an old file gets a clear line.
fn parse_line(line: &[u8]) -> Result<Record, String> {
    #[derive(serde::Deserialize)]
    struct Version {
        kvperf_results: Option<u32>,
    }
    let version: Version =
        serde_json::from_slice(line).map_err(|e| format!("not a kvperf result ({e})"))?;
    match version.kvperf_results {
        Some(FORMAT) => serde_json::from_slice(line)
            .map_err(|e| format!("a kvperf result that does not parse ({e})")),
        Some(old) => Err(format!(
            "written in results format {old} by an older kvperf; this kvperf reads format {FORMAT}: \
             rerun the plan into a new results file"
        )),
        None => Err("not a kvperf result (no kvperf_results version)".into()),
    }
}

/// An open results file that appends one durable line per record.
pub struct Appender {
    file: File,
    path: PathBuf,
}

impl Appender {
    /// Opens `path` for appending, first cutting an incomplete last line
    /// (reported by [`read`]) so the next record starts on a line of its own.
    pub fn open(path: &Path, loaded: &Loaded) -> anyhow::Result<Self> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("cannot open results file '{}'", path.display()))?;
        if loaded.torn_tail > 0 {
            file.set_len(loaded.complete_len)
                .and_then(|_| file.sync_all())
                .with_context(|| format!("cannot repair results file '{}'", path.display()))?;
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            // A new file's directory entry must be durable too.
            File::open(dir).and_then(|d| d.sync_all()).ok();
        }
        Ok(Self {
            file,
            path: path.to_path_buf(),
        })
    }

    /// Appends `record` as one line with a single write, then fsyncs. On
    /// failure (a full disk) the partial line is cut off again.
    pub fn append(&mut self, record: &Record) -> anyhow::Result<()> {
        let mut line = serde_json::to_vec(record)?;
        line.push(b'\n');
        let before = self.file.metadata().map(|m| m.len()).ok();
        let written = self
            .file
            .write_all(&line)
            .and_then(|_| self.file.sync_data());
        if let Err(e) = written {
            if let Some(len) = before {
                let _ = self.file.set_len(len);
            }
            return Err(anyhow::anyhow!(
                "cannot append to results file '{}': {e}; the results already in it are intact",
                self.path.display()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str) -> Record {
        Record {
            kvperf_results: FORMAT,
            plan: PlanId {
                name: "p".into(),
                fingerprint: "f".into(),
                scale: 1.0,
                file: String::new(),
                ratios: false,
            },
            step: StepId {
                id: id.into(),
                config: "c".into(),
                kind: "run".into(),
                workload: "a".into(),
                label: String::new(),
                threads: 4,
                repeat: 1,
                db: String::new(),
            },
            started_at_unix_ms: 0,
            finished_at_unix_ms: 0,
            before: Vec::new(),
            command: Vec::new(),
            output: StepOutput::begin("run"),
        }
    }

    #[test]
    fn appended_records_read_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let mut out = Appender::open(&path, &read(&path).unwrap()).unwrap();
        out.append(&record("x")).unwrap();
        out.append(&record("y")).unwrap();
        let loaded = read(&path).unwrap();
        let ids: Vec<_> = loaded.records.iter().map(|r| r.step.id.as_str()).collect();
        assert_eq!(ids, ["x", "y"]);
        assert_eq!(loaded.torn_tail, 0);
    }

    #[test]
    fn a_torn_last_line_is_dropped_and_cut_before_the_next_append() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let mut out = Appender::open(&path, &Loaded::default()).unwrap();
        out.append(&record("x")).unwrap();
        drop(out);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"kvperf_results\":2,\"pl").unwrap();
        let loaded = read(&path).unwrap();
        assert_eq!(loaded.records.len(), 1);
        assert_eq!(loaded.torn_tail, 23);
        let mut out = Appender::open(&path, &loaded).unwrap();
        out.append(&record("y")).unwrap();
        let again = read(&path).unwrap();
        assert_eq!(again.records.len(), 2);
        assert_eq!(again.torn_tail, 0);
    }

    #[test]
    fn a_corrupt_complete_line_is_an_error_naming_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        std::fs::write(&path, "not json\n").unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(err.contains("line 1"), "{err}");
    }

    #[test]
    fn an_older_format_is_refused_with_its_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        std::fs::write(&path, "{\"kvperf_results\":1,\"plan\":{}}\n").unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(
            err.contains("line 1") && err.contains("results format 1") && err.contains("format 2"),
            "{err}"
        );
    }

    #[test]
    fn a_full_disk_is_a_clear_error() {
        // /dev/full accepts the open and fails every write with ENOSPC.
        let mut out = Appender::open(Path::new("/dev/full"), &Loaded::default()).unwrap();
        let err = out.append(&record("x")).unwrap_err().to_string();
        assert!(err.contains("No space left on device"), "{err}");
    }
}

/// Typed records for unit tests of readers (report, merge).
#[cfg(test)]
pub mod testing {
    use super::step::{op_stats, Measurement, StepOutput};
    use super::*;
    use crate::measure::{OpHistograms, OpKind};

    /// A run step of `config` at `threads`, measuring `ops_per_sec`, with
    /// one successful operation of `op` per latency in `latencies_ns`.
    pub fn record(
        config: &str,
        workload: &str,
        threads: u64,
        ops_per_sec: f64,
        op: OpKind,
        latencies_ns: &[u64],
    ) -> Record {
        let mut h = OpHistograms::new();
        for &ns in latencies_ns {
            h.record(op, ns, None, &Ok(()));
        }
        let mut output = StepOutput::begin("run");
        output.measurements.push(Measurement {
            name: "run".into(),
            threads: threads as usize,
            clients: Default::default(),
            target_ops_per_sec: 0.0,
            warmup_s: 0.0,
            start_unix_ms: 0,
            end_unix_ms: 1000,
            runtime_s: 1.0,
            operations: latencies_ns.len() as u64,
            ops_per_sec,
            hit_time_limit: false,
            ops: op_stats(&h),
            intervals: Vec::new(),
            accounting: None,
            engine_stats: Default::default(),
            integrity: None,
            db_bench: None,
            verdict: None,
            device: None,
        });
        Record {
            kvperf_results: FORMAT,
            plan: PlanId {
                name: "p".into(),
                fingerprint: "f".into(),
                scale: 1.0,
                file: String::new(),
                ratios: false,
            },
            step: StepId {
                id: format!("{config}/{workload}-t{threads}"),
                config: config.into(),
                kind: "run".into(),
                workload: workload.into(),
                label: String::new(),
                threads,
                repeat: 1,
                db: String::new(),
            },
            started_at_unix_ms: 0,
            finished_at_unix_ms: 0,
            before: Vec::new(),
            command: Vec::new(),
            output,
        }
    }
}
