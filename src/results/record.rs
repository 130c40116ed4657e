//! One line of a results file: which plan and step, the command that ran
//! it, and the step's whole typed output ([`StepOutput`]: histograms,
//! accounting, host, engine options, warnings).

use serde::{Deserialize, Serialize};

use super::step::{Measurement, StepOutput};

/// Format version of a results line.
pub const FORMAT: u32 = 2;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    /// [`FORMAT`].
    pub kvperf_results: u32,
    pub plan: PlanId,
    pub step: StepId,
    pub started_at_unix_ms: u64,
    pub finished_at_unix_ms: u64,
    /// What ran before the step to prepare it: `kvperf settle` commands,
    /// `["drop_caches"]`.
    pub before: Vec<Vec<String>>,
    /// The child command that ran the step (reproduce it by hand).
    pub command: Vec<String>,
    pub output: StepOutput,
}

impl Record {
    /// A step run on its own (not by a plan) as a record: its command is
    /// its workload, `name` (a file's name) its configuration, its threads
    /// every client's (a merged result's shards' together).
    pub fn of_step(output: StepOutput, name: &str) -> Self {
        let fingerprint = match (&output.merged, &output.shard) {
            (Some(m), _) => m.fingerprint.clone(),
            (None, Some(s)) => s.fingerprint.clone(),
            (None, None) => String::new(),
        };
        Self {
            kvperf_results: FORMAT,
            plan: PlanId {
                name: format!("kvperf {}", output.command),
                fingerprint,
                scale: 1.0,
                file: String::new(),
                ratios: false,
                ..Default::default()
            },
            step: StepId {
                id: name.to_string(),
                config: name.to_string(),
                kind: output.command.clone(),
                workload: output.command.clone(),
                label: String::new(),
                threads: output.measured().map_or(0, |m| m.threads as u64),
                repeat: 1,
                db: output
                    .host
                    .data_dir
                    .as_ref()
                    .map_or_else(String::new, |d| d.path.clone()),
            },
            started_at_unix_ms: output.started_at_unix_ms,
            finished_at_unix_ms: output.finished_at_unix_ms,
            before: Vec::new(),
            command: Vec::new(),
            output,
        }
    }

    /// The step's measured window (see [`StepOutput::measured`]).
    pub fn measured(&self) -> Option<&Measurement> {
        self.output.measured()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanId {
    pub name: String,
    pub fingerprint: String,
    pub scale: f64,
    pub file: String,
    /// The report writes improvements as ratios ("3.0x") instead of percent.
    #[serde(default)]
    pub ratios: bool,
    /// The plan's `description` and `notes`, for the report.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub notes: String,
    /// The brief the plan reproduces (its `[report] brief`), which the
    /// report cites; empty when it names none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub brief: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepId {
    pub id: String,
    pub config: String,
    /// `precondition`, `load` or `run`.
    pub kind: String,
    pub workload: String,
    pub label: String,
    pub threads: u64,
    pub repeat: u32,
    /// The data directory; empty for engines without one.
    pub db: String,
}
