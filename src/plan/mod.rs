//! Plans: a study written down as TOML (`plans/*.toml`) — the configurations
//! compared, a load, a sequence of workloads x thread counts x repeats —
//! expanded into the flat list of [`Step`]s the plan runner executes.
//!
//! Parsing rejects unknown keys (naming the key and its line) and anything
//! that could only fail hours into a run: empty or zero thread lists,
//! unknown workloads or benchmarks, duplicate configuration names.

pub mod child;
mod convergence;
mod expand;
mod in_progress;
mod inserted;
mod launch;
mod overrides;
mod progress;
pub mod runner;
mod seconds;
mod size;
pub mod step_command;
mod watch;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use expand::{scaled_keys, steps as expand_steps, Step, StepKind};
pub use in_progress::{InProgress, LeftOver};
pub use inserted::InsertedKeys;
pub use launch::{KubernetesOptions, Launcher};
pub use size::{format_size, parse_size};
pub use step_command::StepCommand;

use crate::error::InputError;

/// Which kvperf front end runs the plan's workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Driver {
    /// YCSB core workloads (`kvperf load` / `kvperf run`); properties are `-p`.
    Ycsb,
    /// db_bench benchmarks (`kvperf bench`); properties are `--flag=value`.
    DbBench,
}

/// A plan file as written.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// What the report says about the study beyond its figures (what of
    /// the brief was not reproduced, and why). Not part of the plan's
    /// identity: editing it does not refuse results already written.
    #[serde(default, skip_serializing)]
    pub notes: String,
    pub driver: Driver,
    #[serde(default = "default_engine")]
    pub engine: String,
    /// Sync and drop the page cache before every measured step (needs root).
    #[serde(default)]
    pub drop_caches: bool,
    /// Before every measured step: `true` waits for flushes and compactions,
    /// `"compact"` also compacts the whole store (YCSB plans), `false` neither.
    #[serde(default)]
    pub settle: Settle,
    /// The shortest a step's duration gets under `--scale` (seconds):
    /// a brief's 30-minute window scaled to a fraction of a second
    /// measures start-up, not the engine.
    #[serde(default = "one_u64", deserialize_with = "seconds::de")]
    pub min_duration: u64,
    /// How the clients of a step with `clients > 1` start: `"local"`
    /// (child processes of the plan, the default), `"srun"` (one Slurm
    /// job step, a task per client) or `"kubernetes"` (one Indexed Job, a
    /// pod per client); a `[[steps]]` entry may say otherwise.
    /// Not part of the plan's identity, like `notes`.
    #[serde(default, skip_serializing)]
    pub launcher: Option<Launcher>,
    /// `[kubernetes]`: the image, context, namespace and start timeout of
    /// the kubernetes launcher's Jobs. Not part of the plan's identity.
    #[serde(default, skip_serializing)]
    pub kubernetes: Option<KubernetesOptions>,
    /// Properties (YCSB) or flags (db_bench) of every step.
    #[serde(default)]
    pub properties: BTreeMap<String, PropertyValue>,
    pub precondition: Option<Precondition>,
    /// Measure each config's device first (`kvperf device corners`).
    pub device: Option<DeviceCorners>,
    /// How the report writes comparisons.
    pub report: Option<ReportConfig>,
    #[serde(rename = "configs")]
    pub configs: Vec<Config>,
    pub steps: Vec<StepDef>,
}

/// Precondition each config's device before its load, as SSD studies do
/// (SNIA PTS): a fill file written sequentially `passes` times, then, with
/// `steady`, 4 KiB random-write rounds until steady state
/// (`kvperf device precondition`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Precondition {
    /// Bytes of the fill file, e.g. 1000000000 or "1TiB" (scaled by `--scale`).
    pub fill: PropertyValue,
    #[serde(default = "one")]
    pub passes: u32,
    /// fio-style criterion for the rounds, e.g. "iops:20%" (SNIA's range).
    pub steady: Option<String>,
    /// Seconds per round (scaled by `--scale`).
    #[serde(default = "sixty", deserialize_with = "seconds::de")]
    pub round_seconds: u64,
    #[serde(default = "twenty_five")]
    pub max_rounds: u64,
}

/// `[report]`: `improvements = "percent"` ("+44%", "51% lower", as most
/// briefs) or `"ratio"` ("3.0x", as seed 004); `brief`, the brief the plan
/// reproduces ("seed 004"), which the report then cites where a section
/// follows one of its tables.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportConfig {
    #[serde(default)]
    pub improvements: Improvements,
    /// Not part of the plan's identity, like `notes`.
    #[serde(default, skip_serializing)]
    pub brief: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Improvements {
    #[default]
    Percent,
    Ratio,
}

/// `[device]`: the 4 corners of each config's device, measured before
/// anything else is written (seed 004 sets them beside its results).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceCorners {
    pub corners: bool,
    /// Bytes of the test file (scaled by `--scale`); "well past RAM" at full scale.
    pub size: PropertyValue,
    /// Seconds per corner (scaled by `--scale`).
    #[serde(default = "thirty", deserialize_with = "seconds::de")]
    pub runtime: u64,
    /// Seconds before each corner is counted (scaled by `--scale`).
    #[serde(default = "five", deserialize_with = "seconds::de")]
    pub ramp: u64,
}

/// One of the configurations compared: a data directory (for engines that
/// keep one), and optionally its own engine and properties.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub name: String,
    pub db: Option<PathBuf>,
    pub engine: Option<String>,
    #[serde(default)]
    pub properties: BTreeMap<String, PropertyValue>,
    /// Servers the runner starts (in order) before this config's steps and
    /// stops after them (`kvperf server start|stop`).
    #[serde(default)]
    pub servers: Vec<ServerConfig>,
}

/// `servers = [{ name = "ferretdb", settings = { ferretdb_handler = "sqlite" } }]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// A server `kvperf server start` knows.
    pub name: String,
    #[serde(default = "one")]
    pub nodes: u32,
    pub port: Option<u16>,
    /// The server's settings (`kvperf server start -p KEY=VALUE`).
    #[serde(default)]
    pub settings: BTreeMap<String, PropertyValue>,
}

/// One entry of `[[steps]]`: workloads x threads x repeats.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepDef {
    /// Tells apart entries that run the same workload with other properties
    /// (seed 003: 4 KB and 16 KB values); reports group by workload + label.
    #[serde(default)]
    pub label: String,
    /// A load (YCSB load phase, or a db_bench fill) into an empty store.
    #[serde(default)]
    pub load: bool,
    /// YCSB: a..f (the shipped core workloads) or a workload file relative
    /// to the plan; db_bench: benchmark names.
    pub workloads: Vec<String>,
    pub threads: Vec<i64>,
    #[serde(default)]
    pub repeats: Repeats,
    /// Runs of the whole entry, one after the other (seed 002's "three
    /// test passes"): results number their repeats across passes.
    #[serde(default = "one")]
    pub passes: u32,
    /// Client processes per step (YCSB plans, server engines): each runs
    /// shard i of N of the step (`--shard i/N`) at the same time, and the
    /// runner merges them into the step's one result.
    #[serde(default = "one")]
    pub clients: u32,
    /// How this entry's clients start, instead of the plan's `launcher`.
    #[serde(default, skip_serializing)]
    pub launcher: Option<Launcher>,
    /// YCSB `operationcount`, db_bench `--reads` (per thread, as db_bench).
    pub operations: Option<u64>,
    /// Seconds per step: YCSB `maxexecutiontime`, db_bench `--duration`.
    #[serde(default, deserialize_with = "seconds::de_opt")]
    pub duration: Option<u64>,
    #[serde(default)]
    pub properties: BTreeMap<String, PropertyValue>,
}

/// `repeats = N`, or `repeats = { min = 3, max = 10, until = "5%" }`: each
/// cell again until the 95% interval of its throughput's median is within
/// `until` of the median ([`crate::measure::spread`]), `max` at most.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Repeats {
    Count(u32),
    Adaptive(AdaptiveRepeats),
    /// Anything else, refused by [`validate`] with the forms it takes.
    #[serde(skip_serializing)]
    Other(toml::Value),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdaptiveRepeats {
    pub min: u32,
    pub max: u32,
    /// The largest half-width accepted, a percentage of the median: "5%".
    pub until: String,
}

impl Default for Repeats {
    fn default() -> Self {
        Repeats::Count(1)
    }
}

impl Repeats {
    /// The most repeats a cell can run: what a plan expands to.
    pub fn most(&self) -> u32 {
        match self {
            Repeats::Count(n) => *n,
            Repeats::Adaptive(a) => a.max,
            Repeats::Other(_) => 0,
        }
    }

    /// The stopping rule of adaptive repeats, once validated.
    pub fn until(&self) -> Option<Until> {
        match self {
            Repeats::Adaptive(a) => Some(Until {
                min: a.min,
                max: a.max,
                half_width: parse_percent(&a.until).ok()?,
            }),
            _ => None,
        }
    }

    fn check(&self, passes: u32) -> Result<(), String> {
        let a = match self {
            Repeats::Count(0) => return Err("repeats must be at least 1".into()),
            Repeats::Count(_) => return Ok(()),
            Repeats::Other(v) => {
                return Err(format!(
                    "repeats = {v} is neither a count (repeats = 5) nor a rule (repeats = {{ min = 3, max = 10, until = \"5%\" }})"
                ))
            }
            Repeats::Adaptive(a) => a,
        };
        let least = crate::measure::spread::MIN_REPEATS as u32;
        if a.min == 0 || a.max < a.min {
            return Err(format!(
                "repeats: min ({}) must be at least 1 and max ({}) at least min",
                a.min, a.max
            ));
        }
        if a.max < least {
            return Err(format!(
                "repeats: max = {} cannot stop on an interval: a 95% interval of the median needs {least} repeats; use repeats = {} or a max of {least} or more",
                a.max, a.max
            ));
        }
        if passes > 1 {
            return Err("repeats = { min, max, until } runs within one pass; with passes > 1 use repeats = N".into());
        }
        parse_percent(&a.until).map(|_| ())
    }
}

/// A cell's stopping rule: repeat until the half-width of its median's
/// 95% interval is at most `half_width` (a fraction), from `min` repeats,
/// `max` at most.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Until {
    pub min: u32,
    pub max: u32,
    pub half_width: f64,
}

/// "5%" -> 0.05; a percentage above 0 and below 100.
fn parse_percent(text: &str) -> Result<f64, String> {
    let bad =
        || format!("repeats.until = \"{text}\": a percentage above 0 and below 100, as \"5%\"");
    let number = text.trim().strip_suffix('%').ok_or_else(bad)?;
    let p: f64 = number.trim().parse().map_err(|_| bad())?;
    if p > 0.0 && p < 100.0 {
        Ok(p / 100.0)
    } else {
        Err(bad())
    }
}

/// `settle = true | false | "compact"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Settle {
    Flag(bool),
    Mode(SettleMode),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SettleMode {
    Compact,
}

impl Default for Settle {
    fn default() -> Self {
        Settle::Flag(true)
    }
}

impl Settle {
    pub fn waits(self) -> bool {
        self != Settle::Flag(false)
    }
    pub fn compacts(self) -> bool {
        self == Settle::Mode(SettleMode::Compact)
    }
}

/// A property value as TOML allows it to be written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PropertyValue {
    Int(i64),
    Float(f64),
    Bool(bool),
    Text(String),
}

impl std::fmt::Display for PropertyValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PropertyValue::Int(v) => write!(f, "{v}"),
            PropertyValue::Float(v) => write!(f, "{v}"),
            PropertyValue::Bool(v) => write!(f, "{v}"),
            PropertyValue::Text(v) => f.write_str(v),
        }
    }
}

fn default_engine() -> String {
    crate::engine::DEFAULT_ENGINE.into()
}
fn one_u64() -> u64 {
    1
}

fn one() -> u32 {
    1
}
fn five() -> u64 {
    5
}
fn thirty() -> u64 {
    30
}
fn sixty() -> u64 {
    60
}
fn twenty_five() -> u64 {
    25
}

/// The shipped YCSB core workloads by their plan names, so plans run from
/// any directory.
pub const CORE_WORKLOADS: [(&str, &str); 6] = [
    ("a", crate::shipped::WORKLOADS[0].1),
    ("b", crate::shipped::WORKLOADS[1].1),
    ("c", crate::shipped::WORKLOADS[2].1),
    ("d", crate::shipped::WORKLOADS[3].1),
    ("e", crate::shipped::WORKLOADS[4].1),
    ("f", crate::shipped::WORKLOADS[5].1),
];

/// A parsed, validated plan and where it came from.
#[derive(Debug, Clone)]
pub struct LoadedPlan {
    pub plan: Plan,
    pub path: PathBuf,
    /// Properties given by `--set` (as step properties name them): their
    /// values are the user's, so `--scale` leaves them as they are.
    pub unscaled: Vec<String>,
}

impl LoadedPlan {
    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        Self::from_file_with(path, &[])
    }

    /// The plan in `path` with `--set KEY=VALUE` changes applied.
    pub fn from_file_with(path: &Path, sets: &[String]) -> anyhow::Result<Self> {
        let (text, path) = read_plan(path)?;
        let path = path.as_path();
        let in_plan = |e: String| InputError::Invalid(format!("plan '{}': {e}", path.display()));
        // Parsed as written first, so its own mistakes are named by line.
        let mut plan = parse(&text).map_err(in_plan)?;
        let mut unscaled = Vec::new();
        if !sets.is_empty() {
            let mut tree: toml::Value =
                toml::from_str(&text).map_err(|e| in_plan(e.to_string()))?;
            let known = known_properties(plan.driver);
            let (ops_key, duration_key) = expand::step_keys(plan.driver);
            for assignment in sets {
                overrides::check_name(assignment, &known).map_err(InputError::Invalid)?;
                overrides::apply(&mut tree, assignment).map_err(in_plan)?;
                // Each change checked at once, so a bad value names its --set.
                Plan::deserialize(tree.clone()).map_err(|e| {
                    let message = e.message().trim().to_string();
                    InputError::Invalid(if message.contains("untagged enum") {
                        format!("--set {assignment}: not a value this setting takes (docs/plans.md lists them)")
                    } else {
                        format!("--set {assignment}: {message}")
                    })
                })?;
                unscaled.extend(overrides::property_set(assignment, ops_key, duration_key));
            }
            plan = Plan::deserialize(tree)
                .map_err(|e| in_plan(format!("after --set: {}", e.message().trim())))?;
            validate(&plan).map_err(|e| in_plan(format!("after --set: {e}")))?;
        }
        Ok(Self {
            plan,
            path: path.to_path_buf(),
            unscaled,
        })
    }

    /// Where relative workload files are looked up.
    pub fn dir(&self) -> &Path {
        match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        }
    }
}

/// The property names a `--set` is checked against for typos: YCSB's (and
/// the power meter's); db_bench plans' flags are checked by `kvperf bench`.
fn known_properties(driver: Driver) -> Vec<&'static str> {
    match driver {
        Driver::Ycsb => crate::workload::ycsb::config::KNOWN_PROPERTIES
            .iter()
            .chain(crate::measure::power::PROPERTIES.iter())
            .copied()
            .collect(),
        Driver::DbBench => Vec::new(),
    }
}

/// The text of the plan file `given`, or of the shipped plan it names
/// when no such file exists (then shown as `plans/NAME.toml`).
fn read_plan(given: &Path) -> Result<(String, PathBuf), InputError> {
    use crate::shipped::{plan, plan_names, PlanMatch};
    if given.exists() {
        return Ok((
            crate::files::read_input(given, "plan", crate::files::bound::PLAN)?,
            given.to_path_buf(),
        ));
    }
    match plan(given) {
        PlanMatch::One(name, text) => Ok((text.to_string(), format!("plans/{name}.toml").into())),
        PlanMatch::Several(names) => Err(InputError::Invalid(format!(
            "plan '{}' names several shipped plans: {}; give one",
            given.display(),
            names.join(", ")
        ))),
        PlanMatch::None => Err(InputError::Invalid(format!(
            "plan '{}' does not exist, nor is it a shipped plan's name; shipped: {} (kvperf plan list)",
            given.display(),
            plan_names()
        ))),
    }
}

/// Parses and validates plan text; errors are one line and name the line.
pub fn parse(text: &str) -> Result<Plan, String> {
    let plan: Plan = toml::from_str(text).map_err(|e| {
        let message = e.message().trim().replace('\n', " ");
        match e.span() {
            Some(span) => {
                let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
                format!("line {line}: {message}")
            }
            None => message,
        }
    })?;
    validate(&plan)?;
    Ok(plan)
}

/// The longest config name: it names steps, the step marker and records
/// (a 40 kB name made the marker larger than a marker is read, and kvperf
/// took its own for a stranger's).
const MAX_CONFIG_NAME: usize = 255;

fn validate(plan: &Plan) -> Result<(), String> {
    if plan.name.trim().is_empty() {
        return Err("'name' is empty".into());
    }
    if plan.configs.is_empty() {
        return Err("no [[configs]]: a plan needs at least one data directory".into());
    }
    let mut names = std::collections::HashSet::new();
    for config in &plan.configs {
        if config.name.len() > MAX_CONFIG_NAME {
            return Err(format!(
                "config name '{}...' is {} bytes long; a config name is at most {MAX_CONFIG_NAME}",
                config.name.chars().take(32).collect::<String>(),
                config.name.len()
            ));
        }
        let ok_name = !config.name.is_empty()
            && config
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        if !ok_name {
            return Err(format!(
                "config name '{}' must be letters, digits, '-', '_' or '.'",
                config.name
            ));
        }
        if !names.insert(config.name.as_str()) {
            return Err(format!("config name '{}' is used twice", config.name));
        }
        if config.db.as_ref().is_some_and(|d| d.as_os_str().is_empty()) {
            return Err(format!("config '{}': db is empty", config.name));
        }
    }
    if plan.settle.compacts() && plan.driver == Driver::DbBench {
        return Err(
            "settle = \"compact\" is for YCSB plans; db_bench plans settle with waitforcompaction"
                .into(),
        );
    }
    if plan.steps.is_empty() {
        return Err("no [[steps]]".into());
    }
    if let Some(k) = &plan.kubernetes {
        k.check()?;
    }
    for (i, step) in plan.steps.iter().enumerate() {
        let at = format!("steps[{i}]");
        // A label names its steps as a config's name does: bounded alike,
        // and one line (a line break made the step marker four lines,
        // which kvperf then took for a stranger's file).
        if step.label.len() > MAX_CONFIG_NAME {
            return Err(format!(
                "{at}: label '{}...' is {} bytes long; a label is at most {MAX_CONFIG_NAME}",
                step.label.chars().take(32).collect::<String>(),
                step.label.len()
            ));
        }
        if step.label.chars().any(char::is_control) {
            return Err(format!(
                "{at}: label {:?} holds a control character (a line break, a tab); a label is one line",
                step.label
            ));
        }
        validate_threads(&step.threads).map_err(|e| format!("{at}: threads {e}"))?;
        if step.workloads.is_empty() {
            return Err(format!("{at}: workloads is empty"));
        }
        if step.passes == 0 {
            return Err(format!("{at}: passes must be at least 1"));
        }
        step.repeats
            .check(step.passes)
            .map_err(|e| format!("{at}: {e}"))?;
        if step.clients == 0 || step.clients > MAX_CLIENTS {
            return Err(format!(
                "{at}: clients is {}; a step runs 1 to {MAX_CLIENTS} client processes",
                step.clients
            ));
        }
        if step.clients > 1 && plan.driver != Driver::Ycsb {
            return Err(format!(
                "{at}: clients is for YCSB plans (db_bench runs one process per step)"
            ));
        }
        if step.operations == Some(0) {
            return Err(format!("{at}: operations must be at least 1"));
        }
        if step.duration == Some(0) {
            return Err(format!("{at}: duration must be at least 1 second"));
        }
        for (j, w) in step.workloads.iter().enumerate() {
            expand::check_workload(plan.driver, step.load, w).map_err(|e| format!("{at}: {e}"))?;
            // As a thread count twice: both runs would be repeat 1 of one
            // cell, counted by the report as two repeats.
            if step.workloads[..j].contains(w) {
                return Err(format!(
                    "{at}: workloads has '{w}' twice (repeats = N runs a cell N times)"
                ));
            }
        }
    }
    check_step_count(plan)?;
    if let Some(d) = &plan.device {
        size::parse_size(&d.size.to_string()).map_err(|e| format!("device.size: {e}"))?;
        if d.runtime == 0 {
            return Err("device.runtime must be at least 1 second".into());
        }
    }
    if let Some(p) = &plan.precondition {
        size::parse_size(&p.fill.to_string()).map_err(|e| format!("precondition.fill: {e}"))?;
        if p.passes == 0 {
            return Err("precondition.passes must be at least 1".into());
        }
        if let Some(s) = &p.steady {
            crate::measure::steady::SteadyCriterion::parse(s)
                .map_err(|e| format!("precondition.steady: {e}"))?;
        }
        if p.round_seconds == 0 || p.max_rounds == 0 {
            return Err("precondition.round_seconds and max_rounds must be at least 1".into());
        }
    }
    Ok(())
}

/// Thread counts: at least one, each >= 1, none repeated.
/// The most steps one plan expands to: each is held in memory (its
/// properties, its command) before the first runs, and a day of steps of a
/// second each is under 100 000.
pub const MAX_STEPS: u64 = 100_000;

/// The most client processes one step runs: each is a command line held
/// and checked before the first step (`clients = 4294967295` made
/// `plan run` ask for 584 GB and abort, pass 14).
pub const MAX_CLIENTS: u32 = 1024;

/// Refuses a plan whose configs x workloads x threads x passes x repeats
/// pass [`MAX_STEPS`] before it is expanded (`repeats = 1000000000` made
/// `plan show` and `plan run` allocate until the process aborted), and
/// one whose steps' client processes, each a command checked before the
/// first step, pass it too.
fn check_step_count(plan: &Plan) -> Result<(), String> {
    let count = |per_step: &dyn Fn(&StepDef) -> u64| {
        let per_config = plan.steps.iter().fold(0u64, |sum, step| {
            let cells = [
                step.workloads.len() as u64,
                step.threads.len() as u64,
                u64::from(step.passes),
                u64::from(step.repeats.most()),
                per_step(step),
            ];
            sum.saturating_add(cells.iter().fold(1u64, |n, c| n.saturating_mul(*c)))
        });
        // A precondition and a load per config come on top.
        per_config
            .saturating_add(2)
            .saturating_mul(plan.configs.len().max(1) as u64)
    };
    let shown = |n: u64| {
        if n == u64::MAX {
            "more than 2^64".to_string()
        } else {
            n.to_string()
        }
    };
    let steps = count(&|_| 1);
    if steps > MAX_STEPS {
        return Err(format!(
            "the plan expands to {} steps (configs x workloads x threads x passes x repeats), more than kvperf runs in one plan ({MAX_STEPS}): split it or lower repeats",
            shown(steps)
        ));
    }
    let processes = count(&|step| u64::from(step.clients));
    if processes > MAX_STEPS {
        return Err(format!(
            "the plan's steps run {} client processes (steps x clients), more than kvperf runs in one plan ({MAX_STEPS}): split it or lower clients",
            shown(processes)
        ));
    }
    Ok(())
}

pub fn validate_threads(threads: &[i64]) -> Result<(), String> {
    if threads.is_empty() {
        return Err("is empty: give at least one thread count, e.g. [4, 8, 16]".into());
    }
    for (i, &t) in threads.iter().enumerate() {
        if t < 1 {
            return Err(format!("has {t}: thread counts must be at least 1"));
        }
        if threads[..i].contains(&t) {
            return Err(format!("has {t} twice"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
name = "t"
driver = "ycsb"
[[configs]]
name = "disk"
db = "/tmp/x"
[[steps]]
load = true
workloads = ["a"]
threads = [2]
[[steps]]
workloads = ["a", "c"]
threads = [1, 2]
"#;

    #[test]
    fn minimal_plan_parses_with_defaults() {
        let plan = parse(MINIMAL).unwrap();
        assert_eq!(plan.engine, crate::engine::DEFAULT_ENGINE);
        assert!(plan.settle.waits() && !plan.settle.compacts());
        assert!(!plan.drop_caches);
        assert_eq!(plan.steps[1].repeats, Repeats::Count(1));
    }

    #[test]
    fn settle_takes_a_flag_or_compact() {
        let with = |v: &str| {
            parse(&MINIMAL.replace(
                "driver = \"ycsb\"",
                &format!("driver = \"ycsb\"\nsettle = {v}"),
            ))
        };
        assert!(with("\"compact\"").unwrap().settle.compacts());
        assert!(!with("false").unwrap().settle.waits());
        assert!(with("\"sometimes\"").unwrap_err().starts_with("line 4:"));
        let db_bench = MINIMAL
            .replace("\"ycsb\"", "\"db_bench\"\nsettle = \"compact\"")
            .replace("[\"a\"]", "[\"fillrandom\"]")
            .replace("[\"a\", \"c\"]", "[\"readrandom\"]");
        assert!(parse(&db_bench).unwrap_err().contains("YCSB plans"));
    }

    #[test]
    fn a_plan_past_the_most_steps_is_refused_before_it_expands() {
        let with = |repeats: &str| {
            parse(&MINIMAL.replace(
                "threads = [1, 2]",
                &format!("threads = [1, 2]\nrepeats = {repeats}"),
            ))
        };
        assert!(with("1000").is_ok());
        let err = with("1000000000").unwrap_err();
        assert!(
            err.contains("the plan expands to 400000000") && err.contains("(100000)"),
            "{err}"
        );
        let err = with("4294967295").map(|_| ()).unwrap_err();
        assert!(err.contains("more than kvperf runs in one plan"), "{err}");
    }

    #[test]
    fn unknown_key_names_key_and_line() {
        let text = MINIMAL.replace("threads = [1, 2]", "threads = [1, 2]\nthreadz = 3");
        let err = parse(&text).unwrap_err();
        assert!(err.contains("threadz"), "{err}");
        assert!(err.starts_with("line 14:"), "{err}");
        assert!(!err.contains('\n'));
    }

    #[test]
    fn bad_thread_lists_are_rejected() {
        for (list, want) in [
            ("[]", "is empty"),
            ("[0, 4]", "has 0"),
            ("[-4]", "has -4"),
            ("[4, 4]", "has 4 twice"),
        ] {
            let text = MINIMAL.replace("threads = [1, 2]", &format!("threads = {list}"));
            let err = parse(&text).unwrap_err();
            assert!(err.contains(want), "{list}: {err}");
        }
        let text = MINIMAL.replace("threads = [1, 2]", "threads = [\"many\"]");
        let err = parse(&text).unwrap_err();
        assert!(err.starts_with("line 13:"), "{err}");
    }

    #[test]
    fn unknown_workload_and_duplicate_config_are_rejected() {
        let err = parse(&MINIMAL.replace("[\"a\", \"c\"]", "[\"g\"]")).unwrap_err();
        assert!(err.contains("'g'"), "{err}");
        let twice = format!("{MINIMAL}\n[[configs]]\nname = \"disk\"\ndb = \"/tmp/y\"\n");
        assert!(parse(&twice).unwrap_err().contains("used twice"));
    }

    #[test]
    fn db_bench_steps_check_benchmark_names() {
        let text = MINIMAL
            .replace("\"ycsb\"", "\"db_bench\"")
            .replace("[\"a\"]", "[\"fillrandom\"]")
            .replace("[\"a\", \"c\"]", "[\"readrandom\", \"readwhilewritin\"]");
        let err = parse(&text).unwrap_err();
        assert!(err.contains("readwhilewriting"), "did-you-mean: {err}");
        let load_is_not_fill = MINIMAL
            .replace("\"ycsb\"", "\"db_bench\"")
            .replace("[\"a\"]", "[\"readrandom\"]");
        assert!(parse(&load_is_not_fill).unwrap_err().contains("fill"));
    }

    #[test]
    fn set_takes_durations_with_units_as_the_file_does() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        std::fs::write(&path, MINIMAL).unwrap();
        let sets = |s: &[&str]| {
            let sets: Vec<String> = s.iter().map(|s| s.to_string()).collect();
            LoadedPlan::from_file_with(&path, &sets).map_err(|e| format!("{e:#}"))
        };
        let plan = sets(&["duration=5s", "min_duration=1m", "steps.0.duration=2h"])
            .unwrap()
            .plan;
        assert_eq!(plan.steps[1].duration, Some(5));
        assert_eq!(plan.steps[0].duration, Some(7200));
        assert_eq!(plan.min_duration, 60);
        assert_eq!(
            sets(&["duration=600"]).unwrap().plan.steps[1].duration,
            Some(600)
        );
        let err = sets(&["duration=5x"]).unwrap_err();
        assert!(
            err.starts_with("--set duration=5x: ") && err.contains("unknown unit 'x'"),
            "{err}"
        );
        assert!(!err.contains('\n'), "{err}");
        let err = sets(&["duration=1.5s"]).unwrap_err();
        assert!(err.contains("whole number of seconds"), "{err}");
        // In the file too, and the same study as whole seconds.
        let with = |v: &str| {
            parse(&MINIMAL.replace(
                "threads = [1, 2]",
                &format!("threads = [1, 2]\nduration = {v}"),
            ))
        };
        assert_eq!(with("\"10m\"").unwrap().steps[1].duration, Some(600));
        assert_eq!(
            serde_json::to_string(&with("\"10m\"").unwrap()).unwrap(),
            serde_json::to_string(&with("600").unwrap()).unwrap()
        );
    }
}
