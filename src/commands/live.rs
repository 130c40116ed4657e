//! A step's live figures (issue: watch a long study while it runs):
//! served at `--metrics-addr` when given, mirrored to the directory a
//! watching `kvperf plan run` names in `KVPERF_LIVE_DIR`, or not kept at
//! all (then recording them costs nothing).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::error::InputError;
use crate::measure::live::{self, LiveFigures, LIVE_DIR_ENV};

/// The step's live figures, labelled with `labels`; serving starts now,
/// before anything is measured, so a taken address is one line.
pub fn figures(
    metrics_addr: Option<&str>,
    labels: BTreeMap<String, String>,
) -> Result<Option<Arc<LiveFigures>>, InputError> {
    let mirror = mirror_path();
    if metrics_addr.is_none() && mirror.is_none() {
        return Ok(None);
    }
    let figures = Arc::new(LiveFigures::new(labels, mirror));
    if let Some(addr) = metrics_addr {
        let served = figures.clone();
        let at = crate::metrics_endpoint::serve(
            addr,
            Arc::new(move || live::render(&[served.snapshot()])),
        )?;
        eprintln!("kvperf: live figures at http://{at}/metrics");
    }
    Ok(Some(figures))
}

/// Where this step mirrors its figures: `KVPERF_LIVE_DIR` when it names
/// the directory its parent, a watching plan run, made for its steps.
/// Anything else (the variable left in a user's shell) is no plan's: a
/// user's `DIR/<pid>.json` was replaced, then removed (pass 14), so one
/// line, and nothing is written there.
fn mirror_path() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os(LIVE_DIR_ENV)?);
    // SAFETY: getppid has no preconditions and cannot fail.
    let parent = unsafe { libc::getppid() } as u32;
    if dir.file_name() != Some(live::live_dir_name(parent).as_ref()) {
        eprintln!(
            "kvperf: warning: {LIVE_DIR_ENV} ('{}') is not the directory of a plan run watching this step; the step's figures are mirrored nowhere",
            dir.display()
        );
        return None;
    }
    Some(dir.join(format!("{}.json", std::process::id())))
}

/// Removes a step's mirror when it ends: a watching plan shows only the
/// steps in progress.
pub fn finished(figures: Option<&Arc<LiveFigures>>) {
    if let Some(figures) = figures {
        figures.remove_mirror();
    }
}
