//! Which key numbers kvperf's YCSB loads put into a store it marked: a
//! ledger beside the marker, one line per finished load (`START COUNT`:
//! the load inserted the keys `START..START+COUNT`, warm-up included;
//! `START COUNT FAILED`: it tried them and FAILED of those inserts failed,
//! so up to FAILED of them may be missing). A store kvperf creates or
//! empties starts with an empty ledger; a store without one (adopted, or
//! made by an older kvperf) is unknown and never judged. So a run can
//! say, before it measures, that it will read keys no load inserted
//! (docs/semantics.md, "Records a run reads").

use std::fs;
use std::io::Write;
use std::ops::Range;
use std::path::Path;

use anyhow::Context;

use crate::error::InputError;

/// The ledger's file name in the data directory (owned by no engine).
pub const LEDGER: &str = ".kvperf-loaded-keys";

/// Starts an empty ledger in `dir`: a store kvperf just made or emptied.
/// Written atomically by renaming a new file over the old ledger: never
/// through a link or into a file that has another name.
pub fn begin(dir: &Path) -> anyhow::Result<()> {
    let path = dir.join(LEDGER);
    crate::files::owned::write_atomically(dir, LEDGER, b"", crate::files::owned::Place::Replace)
        .with_context(|| format!("cannot write '{}'", path.display()))
}

/// Records that a load tried to insert the keys `start..start+count` into
/// the store in `dir`, `failed` of them in vain; nothing when the store
/// has no ledger (unknown stays unknown). Appended and synced, so shards
/// loading one store each add their line.
pub fn record(dir: &Path, start: u64, count: u64, failed: u64) -> anyhow::Result<()> {
    let path = dir.join(LEDGER);
    if count == 0 || fs::symlink_metadata(&path).is_err() {
        return Ok(());
    }
    let mut file = crate::files::owned::open_own_for_append(&path)
        .with_context(|| format!("cannot open '{}'", path.display()))?;
    let line = match failed {
        0 => format!("{start} {count}\n"),
        failed => format!("{start} {count} {failed}\n"),
    };
    file.write_all(line.as_bytes())
        .and_then(|_| file.sync_all())
        .with_context(|| format!("cannot write '{}'", path.display()))
}

/// The keys the store in `dir` was loaded with, or None when kvperf does
/// not know (no ledger, or one that is not a ledger's text). A ledger that
/// is not a regular file (a FIFO, a link to a device) or larger than a
/// ledger can be is refused in one line (see [`crate::files::open_input`]).
pub fn loaded(dir: &Path) -> Result<Option<LoadedKeys>, InputError> {
    let path = dir.join(LEDGER);
    if !path.exists() {
        return Ok(None);
    }
    let bytes =
        crate::files::read_input_bytes(&path, "loaded-keys ledger", crate::files::bound::LEDGER)?;
    Ok(std::str::from_utf8(&bytes).ok().and_then(parse_ledger))
}

/// The loaded keys a ledger's text lists; None when a line is not one of
/// a ledger's.
fn parse_ledger(text: &str) -> Option<LoadedKeys> {
    let mut ranges = Vec::new();
    let mut failures = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let numbers: Vec<u64> = line
            .split_whitespace()
            .map(|n| n.parse::<u64>().ok())
            .collect::<Option<_>>()?;
        let (start, count, failed) = match numbers[..] {
            [start, count] => (start, count, 0),
            [start, count, failed] => (start, count, failed),
            _ => return None,
        };
        let range = start..start.saturating_add(count);
        if failed > 0 {
            failures.push((range.clone(), failed));
        }
        ranges.push(range);
    }
    let mut keys = LoadedKeys::from_ranges(ranges);
    keys.failures = failures;
    Some(keys)
}

/// Loaded key numbers as disjoint, sorted ranges (a key loaded twice
/// counts once), and the loads that had failed inserts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedKeys {
    ranges: Vec<Range<u64>>,
    /// A load's range and how many of its inserts failed: keys that may
    /// be missing from it, where is not known.
    failures: Vec<(Range<u64>, u64)>,
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
        Self {
            ranges: merged,
            failures: Vec::new(),
        }
    }

    /// Whether no load finished in the store (a ledger just begun).
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// How many of the keys `keys` are surely loaded: those a load
    /// inserted, less every failed insert that may have been one of them.
    pub fn within(&self, keys: Range<u64>) -> u64 {
        let overlap = |r: &Range<u64>| r.end.min(keys.end).saturating_sub(r.start.max(keys.start));
        let inserted: u64 = self.ranges.iter().map(overlap).sum();
        let maybe_missing: u64 = self
            .failures
            .iter()
            .map(|(r, failed)| overlap(r).min(*failed))
            .sum();
        inserted.saturating_sub(maybe_missing)
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
        assert_eq!(loaded(tmp.path()).unwrap(), None);
        record(tmp.path(), 0, 10, 0).unwrap();
        assert_eq!(
            loaded(tmp.path()).unwrap(),
            None,
            "no ledger: nothing recorded"
        );
        begin(tmp.path()).unwrap();
        assert_eq!(loaded(tmp.path()).unwrap().unwrap().within(0..10), 0);
        record(tmp.path(), 0, 6, 0).unwrap();
        record(tmp.path(), 6, 4, 0).unwrap();
        assert_eq!(loaded(tmp.path()).unwrap().unwrap().within(0..10), 10);
        begin(tmp.path()).unwrap();
        assert_eq!(
            loaded(tmp.path()).unwrap().unwrap().within(0..10),
            0,
            "emptied"
        );
    }

    #[test]
    fn failed_inserts_count_as_maybe_missing_and_old_ledgers_still_read() {
        let tmp = tempfile::tempdir().unwrap();
        begin(tmp.path()).unwrap();
        // A load of 0..1000 with 3 failed inserts, where unknown.
        record(tmp.path(), 0, 1000, 3).unwrap();
        let keys = loaded(tmp.path()).unwrap().unwrap();
        assert_eq!(keys.within(0..1000), 997);
        // Never more missing than the part of the load asked about.
        assert_eq!(keys.within(0..2), 0);
        assert_eq!(keys.within(500..1500), 497);
        // A line as an older kvperf wrote it.
        std::fs::write(tmp.path().join(LEDGER), "0 10\n").unwrap();
        assert_eq!(loaded(tmp.path()).unwrap().unwrap().within(0..10), 10);
        std::fs::write(tmp.path().join(LEDGER), "0 10 1 7\n").unwrap();
        assert_eq!(
            loaded(tmp.path()).unwrap(),
            None,
            "a line it cannot read: unknown"
        );
    }
}
