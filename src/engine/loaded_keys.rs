//! Which key numbers kvperf's YCSB loads put into a store it marked: a
//! ledger beside the marker, one line per finished load (`START COUNT`:
//! the keys `START..START+COUNT` were inserted). A store kvperf creates or
//! empties starts with an empty ledger; a store without one (adopted, or
//! made by an older kvperf) is unknown and never judged. So a run can
//! say, before it measures, that it will read keys no load inserted
//! (docs/semantics.md, "Records a run reads").

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::ops::Range;
use std::path::Path;

use anyhow::Context;

/// The ledger's file name in the data directory (owned by no engine).
pub const LEDGER: &str = ".kvperf-loaded-keys";

/// Starts an empty ledger in `dir`: a store kvperf just made or emptied.
pub fn begin(dir: &Path) -> anyhow::Result<()> {
    let path = dir.join(LEDGER);
    fs::write(&path, "").with_context(|| format!("cannot write '{}'", path.display()))
}

/// Records that a load inserted the keys `start..start+count` into the
/// store in `dir`; nothing when the store has no ledger (unknown stays
/// unknown). Appended and synced, so shards loading one store each add
/// their line.
pub fn record(dir: &Path, start: u64, count: u64) -> anyhow::Result<()> {
    let path = dir.join(LEDGER);
    if count == 0 || !path.exists() {
        return Ok(());
    }
    let mut file = OpenOptions::new()
        .append(true)
        .open(&path)
        .with_context(|| format!("cannot open '{}'", path.display()))?;
    file.write_all(format!("{start} {count}\n").as_bytes())
        .and_then(|_| file.sync_all())
        .with_context(|| format!("cannot write '{}'", path.display()))
}

/// The keys the store in `dir` was loaded with, or None when kvperf does
/// not know (no ledger, or one it cannot read).
pub fn loaded(dir: &Path) -> Option<LoadedKeys> {
    let text = fs::read_to_string(dir.join(LEDGER)).ok()?;
    let mut ranges = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let (start, count) = line.trim().split_once(' ')?;
        let (start, count) = (start.parse::<u64>().ok()?, count.parse::<u64>().ok()?);
        ranges.push(start..start.saturating_add(count));
    }
    Some(LoadedKeys::from_ranges(ranges))
}

/// Loaded key numbers as disjoint, sorted ranges (a key loaded twice
/// counts once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedKeys {
    ranges: Vec<Range<u64>>,
}

impl LoadedKeys {
    fn from_ranges(mut ranges: Vec<Range<u64>>) -> Self {
        ranges.sort_by_key(|r| r.start);
        let mut merged: Vec<Range<u64>> = Vec::new();
        for r in ranges.into_iter().filter(|r| !r.is_empty()) {
            match merged.last_mut() {
                Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
                _ => merged.push(r),
            }
        }
        Self { ranges: merged }
    }

    /// How many of the keys `keys` were loaded.
    pub fn within(&self, keys: Range<u64>) -> u64 {
        self.ranges
            .iter()
            .map(|r| r.end.min(keys.end).saturating_sub(r.start.max(keys.start)))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_loads_count_each_key_once_and_only_inside_the_range() {
        let keys = LoadedKeys::from_ranges(vec![500..1000, 0..600, 2000..2100]);
        assert_eq!(keys.within(0..1000), 1000);
        assert_eq!(keys.within(0..5000), 1100);
        assert_eq!(keys.within(900..2050), 150);
        assert_eq!(LoadedKeys::from_ranges(vec![]).within(0..10), 0);
    }

    #[test]
    fn a_ledger_counts_what_was_recorded_and_no_ledger_is_unknown() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(loaded(tmp.path()), None);
        record(tmp.path(), 0, 10).unwrap();
        assert_eq!(loaded(tmp.path()), None, "no ledger: nothing recorded");
        begin(tmp.path()).unwrap();
        assert_eq!(loaded(tmp.path()).unwrap().within(0..10), 0);
        record(tmp.path(), 0, 6).unwrap();
        record(tmp.path(), 6, 4).unwrap();
        assert_eq!(loaded(tmp.path()).unwrap().within(0..10), 10);
        begin(tmp.path()).unwrap();
        assert_eq!(loaded(tmp.path()).unwrap().within(0..10), 0, "emptied");
    }
}
