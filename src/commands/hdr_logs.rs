//! YCSB's `-p hdrhistogram.fileoutput=true`: where the interval logs of a
//! load or run go (`<hdrhistogram.output.path><GROUP>.hdr`), checked
//! before anything is measured and written when the window has closed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::InputError;
use crate::files::Destination;
use crate::measure::interval_log::{self, IntervalLogs};
use crate::measure::OpKind;
use crate::properties::Properties;

/// The checked destinations of every log a step may write.
pub struct HdrLogs {
    /// Group name (`READ`, `READ-FAILED`, `Intended-READ`...) -> file.
    destinations: BTreeMap<String, Destination>,
}

impl HdrLogs {
    /// None unless `hdrhistogram.fileoutput` is true. Every file a group
    /// could write is checked now: which groups appear (failures, intended
    /// latency) is known only after the run.
    pub fn from_properties(p: &Properties, inputs: &[&Path]) -> Result<Option<Self>, InputError> {
        if !p.bool("hdrhistogram.fileoutput", false)? {
            return Ok(None);
        }
        let prefix = p.string("hdrhistogram.output.path", "");
        let mut destinations = BTreeMap::new();
        for kind in OpKind::ALL {
            for (before, after) in [
                ("", ""),
                ("", "-FAILED"),
                ("Intended-", ""),
                ("Intended-", "-FAILED"),
            ] {
                let group = format!("{before}{}{after}", kind.ycsb_name());
                let path = PathBuf::from(format!("{prefix}{group}.hdr"));
                let destination = Destination::check(
                    &path,
                    "hdrhistogram.output.path",
                    interval_log::WRITTEN,
                    inputs,
                )?;
                destinations.insert(group, destination);
            }
        }
        Ok(Some(Self { destinations }))
    }

    /// Every file a log may be written to.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.destinations.values().map(Destination::path)
    }

    /// Writes each group's log for a window that opened at
    /// `opened_unix_ms`; the paths written, or the failures (each log
    /// kept elsewhere, named in the error). A log that fails stops no
    /// other: the groups after it were lost.
    pub fn write(&self, logs: &IntervalLogs, opened_unix_ms: u64) -> anyhow::Result<Vec<PathBuf>> {
        let mut written = Vec::new();
        let mut failed = Vec::new();
        for (group, text) in logs.files(opened_unix_ms) {
            let Some(destination) = self.destinations.get(&group) else {
                failed.push(format!(
                    "no interval log file was checked for group {group}"
                ));
                continue;
            };
            match destination.write(text.as_bytes()) {
                Ok(()) => written.push(destination.path().to_path_buf()),
                Err(e) => failed.push(format!("{e:#}")),
            }
        }
        if failed.is_empty() {
            return Ok(written);
        }
        let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
        let others = match names.is_empty() {
            true => String::new(),
            false => format!(" (written: {})", names.join(", ")),
        };
        anyhow::bail!("{}{others}", failed.join("; "))
    }
}
