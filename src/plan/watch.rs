//! `kvperf plan run --metrics-addr`: the study's progress and the live
//! figures of the step in progress, served in the Prometheus text format
//! for the whole study. Each step is a child process; it mirrors its
//! figures into a directory this watch creates (and removes at the end).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::expand::Step;
use crate::error::InputError;
use crate::measure::live::{self, Snapshot};

pub struct PlanWatch {
    plan: String,
    total: usize,
    dir: PathBuf,
    state: Mutex<WatchState>,
}

#[derive(Default)]
struct WatchState {
    finished: usize,
    /// The labels of the step in progress.
    current: Option<BTreeMap<String, String>>,
}

impl PlanWatch {
    /// Serves at `addr` (checked now: a taken address is one line) for a
    /// plan of `total` steps, `finished` of them done earlier.
    pub fn start(
        addr: &str,
        plan: &str,
        total: usize,
        finished: usize,
    ) -> Result<Arc<Self>, InputError> {
        let dir =
            std::env::temp_dir().join(crate::measure::live::live_dir_name(std::process::id()));
        // A directory of its own: everything in it is the steps' mirrors.
        std::fs::create_dir(&dir).map_err(|e| {
            InputError::Invalid(format!(
                "--metrics-addr: cannot create '{}' for the steps' figures: {e}",
                dir.display()
            ))
        })?;
        let watch = Arc::new(Self {
            plan: plan.to_string(),
            total,
            dir,
            state: Mutex::new(WatchState {
                finished,
                current: None,
            }),
        });
        let served = watch.clone();
        let at = crate::metrics_endpoint::serve(addr, Arc::new(move || served.render()));
        match at {
            Ok(at) => eprintln!("kvperf: live figures at http://{at}/metrics"),
            Err(e) => {
                watch.remove_dir();
                return Err(e);
            }
        }
        Ok(watch)
    }

    /// Where the steps mirror their figures.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn step_started(&self, step: &Step) {
        let labels = BTreeMap::from([
            ("plan".to_string(), self.plan.clone()),
            ("step".to_string(), step.id.clone()),
            ("config".to_string(), step.config.clone()),
            ("workload".to_string(), step.workload.clone()),
            ("threads".to_string(), step.threads.to_string()),
            ("repeat".to_string(), step.repeat.to_string()),
        ]);
        self.lock().current = Some(labels);
    }

    /// The step in progress ended (kept or not): its figures go.
    pub fn step_ended(&self, kept: bool) {
        let mut state = self.lock();
        state.finished += usize::from(kept);
        state.current = None;
        drop(state);
        for entry in std::fs::read_dir(&self.dir).into_iter().flatten().flatten() {
            let _ = std::fs::remove_file(entry.path());
        }
    }

    /// Removes the mirrors' directory (it is kvperf's own).
    pub fn remove_dir(&self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, WatchState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn render(&self) -> String {
        let (finished, current) = {
            let s = self.lock();
            (s.finished, s.current.clone())
        };
        let plan = BTreeMap::from([("plan".to_string(), self.plan.clone())]);
        let mut out = String::new();
        live::metric(
            &mut out,
            "kvperf_plan_steps",
            "gauge",
            "Steps of the study: all of them, and those finished (this run or an earlier one).",
        );
        live::line(
            &mut out,
            "kvperf_plan_steps",
            &plan,
            &[("state", "total")],
            self.total as f64,
        );
        live::line(
            &mut out,
            "kvperf_plan_steps",
            &plan,
            &[("state", "finished")],
            finished as f64,
        );
        let Some(step) = current else {
            return out;
        };
        // Each step process's figures, labelled with the step they measure.
        let snapshots: Vec<Snapshot> = std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
            .filter_map(|e| std::fs::read(e.path()).ok())
            .filter_map(|bytes| serde_json::from_slice::<Snapshot>(&bytes).ok())
            .map(|mut s| {
                s.labels.extend(step.clone());
                s
            })
            .collect();
        out.push_str(&live::render(&snapshots));
        out
    }
}

/// Removes the watch's directory when the plan run ends, however it ends
/// (the serving thread keeps the watch itself alive until the process exits).
pub struct WatchCleanup(pub Option<Arc<PlanWatch>>);

impl Drop for WatchCleanup {
    fn drop(&mut self) {
        if let Some(watch) = &self.0 {
            watch.remove_dir();
        }
    }
}
