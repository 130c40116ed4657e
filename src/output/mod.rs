//! One result type ([`RunReport`]) and one file per output format, the way
//! hyperfine's exporters work: formats read the report, measurements know
//! nothing of formats.

pub mod dbbench_text;
pub mod json;
pub mod ycsb_text;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use anyhow::Context;
use base64::Engine as _;
use serde::Serialize;

use crate::engine::EngineInfo;
use crate::host::HostInfo;
use crate::measure::accounting::Accounting;
use crate::measure::{GroupSummary, OpHistograms, Outcome};

/// kvperf's own identity, recorded in every result.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Provenance {
    pub version: String,
    pub commit: String,
}

impl Provenance {
    pub fn current() -> Self {
        Self {
            version: env!("CARGO_PKG_VERSION").to_string(),
            commit: env!("KVPERF_GIT_COMMIT").to_string(),
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Overall {
    pub runtime_ms: f64,
    pub operations: u64,
    pub throughput_ops_per_sec: f64,
    /// True when `maxexecutiontime` ended the run before its operations.
    pub hit_time_limit: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Integrity {
    pub verified: u64,
    pub failed: u64,
}

/// Everything one `kvperf load` or `kvperf run` measured, and what makes it
/// reproducible.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub kvperf: Provenance,
    pub command: String,
    pub started_at_unix_ms: u128,
    pub engine: EngineInfo,
    pub engine_stats: BTreeMap<String, u64>,
    pub threads: usize,
    pub target_ops_per_sec: u64,
    pub seed: u64,
    pub warmup_s: f64,
    /// Every property as resolved from `-P` files and `-p` overrides.
    pub properties: BTreeMap<String, String>,
    pub host: HostInfo,
    pub overall: Overall,
    /// YCSB groups in print order: `READ`, `READ-FAILED`, `Intended-READ`...
    pub groups: Vec<GroupSummary>,
    pub integrity: Option<Integrity>,
    /// Device and process I/O, CPU and energy of the run (engine close included).
    pub accounting: Option<Accounting>,
    /// Group name -> HdrHistogram (V2 + deflate, base64; nanoseconds), so
    /// percentiles can be recomputed and runs merged exactly.
    pub histograms: BTreeMap<String, String>,
}

/// Builds the YCSB groups of `h`: for each op type the successful latencies
/// (with return counts), failed latencies and, if asked, the intended-start
/// latencies.
pub fn summarize_groups(
    h: &OpHistograms,
    percentiles: &[f64],
    with_intended: bool,
) -> (Vec<GroupSummary>, BTreeMap<String, String>) {
    let mut groups = Vec::new();
    let mut encoded = BTreeMap::new();
    for (kind, group) in h.iter() {
        if group.total_returns() == 0 {
            continue;
        }
        let name = kind.ycsb_name();
        let mut main = GroupSummary::from_histogram(name, &group.ok, percentiles);
        main.returns = Outcome::ALL
            .iter()
            .filter(|o| matches!(o, Outcome::Ok | Outcome::Error) || group.count(**o) > 0)
            .map(|o| (o.ycsb_name().to_string(), group.count(*o)))
            .collect();
        groups.push(main);
        encoded.insert(name.to_string(), encode_histogram(&group.ok));
        let mut extra = |label: String, hist: &hdrhistogram::Histogram<u64>| {
            if !hist.is_empty() {
                groups.push(GroupSummary::from_histogram(&label, hist, percentiles));
                encoded.insert(label, encode_histogram(hist));
            }
        };
        extra(format!("{name}-FAILED"), &group.failed);
        if with_intended {
            extra(format!("Intended-{name}"), &group.intended);
            extra(format!("Intended-{name}-FAILED"), &group.intended_failed);
        }
    }
    (groups, encoded)
}

pub fn encode_histogram(h: &hdrhistogram::Histogram<u64>) -> String {
    use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
    let mut bytes = Vec::new();
    // Serializing into a Vec cannot fail for a valid histogram.
    let _ = V2DeflateSerializer::new().serialize(h, &mut bytes);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub fn decode_histogram(text: &str) -> anyhow::Result<hdrhistogram::Histogram<u64>> {
    use hdrhistogram::serialization::Deserializer;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .context("histogram is not base64")?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| anyhow::anyhow!("histogram does not decode: {e:?}"))
}

/// Milliseconds since the Unix epoch, for the `*_unix_ms` fields of results.
pub fn unix_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
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
    use crate::engine::OpError;
    use crate::measure::OpKind;

    #[test]
    fn histograms_round_trip_through_text() {
        let mut h = crate::measure::new_histogram();
        for v in [1_000u64, 5_000, 1_000_000] {
            h.record(v).unwrap();
        }
        let back = decode_histogram(&encode_histogram(&h)).unwrap();
        assert_eq!(back.len(), 3);
        assert_eq!(back.max(), h.max());
    }

    #[test]
    fn groups_follow_ycsb_naming() {
        let mut h = OpHistograms::new();
        h.record(OpKind::Read, 2_000, Some(9_000), &Ok(()));
        h.record(OpKind::Read, 3_000, Some(9_000), &Err(OpError::NotFound));
        let (groups, encoded) = summarize_groups(&h, &[99.0], true);
        let names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "READ",
                "READ-FAILED",
                "Intended-READ",
                "Intended-READ-FAILED"
            ]
        );
        assert_eq!(
            groups[0].returns,
            vec![
                ("OK".to_string(), 1),
                ("NOT_FOUND".to_string(), 1),
                ("ERROR".to_string(), 0)
            ]
        );
        assert!(encoded.contains_key("Intended-READ"));
    }

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
