//! A plan expanded into steps: per configuration, the precondition, then
//! each `[[steps]]` entry as workloads x threads x repeats, with properties
//! merged (workload file < plan < config < step) and counts scaled.

use std::path::PathBuf;

use serde::Serialize;

use super::{Config, Driver, Launcher, LoadedPlan, Plan, StepDef, Until, CORE_WORKLOADS};
use crate::error::did_you_mean;
use crate::properties::Properties;
use crate::workload::dbbench::Benchmark;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// The 4 corners of the config's device (`kvperf device corners`).
    Corners,
    Precondition,
    Load,
    Run,
}

/// One unit of work, measured and recorded on its own.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// Stable within a plan: what a rerun matches finished results by.
    pub id: String,
    pub config: String,
    /// The data directory, for engines that keep one.
    pub db: Option<PathBuf>,
    /// For a server engine, the config's `db`: where its servers keep their
    /// data (`DIR/<server name>`), on the device the config measures.
    pub servers_dir: Option<PathBuf>,
    /// The servers the config needs, started around its steps.
    pub servers: Vec<super::ServerConfig>,
    pub engine: String,
    pub kind: StepKind,
    /// `a`..`f` or a workload file (YCSB), a benchmark (db_bench).
    pub workload: String,
    /// The `[[steps]]` entry's label ("" if none).
    pub label: String,
    /// Threads of each client process.
    pub threads: u64,
    pub repeat: u32,
    /// Client processes that run the step together, each a shard of it.
    /// Left out of the fingerprint at 1, so plans written before it keep theirs.
    #[serde(skip_serializing_if = "is_one")]
    pub clients: u32,
    /// How the clients start (a step of one client runs as a child of the
    /// plan whatever it says). Not part of the fingerprint: the same study
    /// launched another way is the same study.
    #[serde(skip)]
    pub launcher: Launcher,
    /// Adaptive repeats: the rule that decides whether this repeat runs
    /// (it does not when the cell's earlier repeats already meet it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until: Option<Until>,
    /// Merged and scaled: YCSB properties, db_bench flags, or the flags of
    /// `kvperf device corners|precondition`.
    pub properties: Vec<(String, String)>,
}

/// Counts `--scale` multiplies, per driver; durations are scaled too, so a
/// scaled study keeps the full study's proportions.
const YCSB_COUNTS: [&str; 4] = [
    "recordcount",
    "operationcount",
    "insertcount",
    "insertstart",
];
const DB_BENCH_COUNTS: [&str; 2] = ["num", "reads"];

/// Checks a workload name of a `[[steps]]` entry.
pub fn check_workload(driver: Driver, load: bool, name: &str) -> Result<(), String> {
    match driver {
        Driver::Ycsb => {
            let known = CORE_WORKLOADS.iter().any(|(n, _)| *n == name);
            if known || name.contains('/') || name.contains('.') {
                Ok(())
            } else {
                Err(format!(
                    "workload '{name}' is not one of a, b, c, d, e, f (or a file path like ./my-workload)"
                ))
            }
        }
        Driver::DbBench => {
            let bench = Benchmark::parse(name).map_err(|e| e.to_string())?;
            match (load, bench.needs_fresh_db()) {
                (true, false) => Err(format!(
                    "a load step needs a fill benchmark (fillrandom, fillseq), not '{name}'"
                )),
                (false, true) => Err(format!(
                    "'{name}' empties the store; use it in a step with load = true"
                )),
                _ => Ok(()),
            }
        }
    }
}

/// Expands `loaded` at `scale`, with `db` overrides by config name.
pub fn steps(
    loaded: &LoadedPlan,
    scale: f64,
    db_overrides: &[(String, PathBuf)],
) -> anyhow::Result<Vec<Step>> {
    let plan = &loaded.plan;
    let mut out = Vec::new();
    for config in &plan.configs {
        let (engine, db, servers_dir) = engine_and_dirs(plan, config, db_overrides);
        // The `[[steps]]` entry's launcher, for the steps pushed next.
        let launcher = std::cell::Cell::new(Launcher::Local);
        // The `[[steps]]` entry's adaptive repeats, likewise.
        let until = std::cell::Cell::new(None);
        let mut push =
            |kind: StepKind, workload: &str, label: &str, threads, clients, repeat, properties| {
                let index = out.len();
                let tag = if label.is_empty() {
                    String::new()
                } else {
                    format!("-{label}")
                };
                let processes = if clients > 1 {
                    format!("-c{clients}")
                } else {
                    String::new()
                };
                out.push(Step {
                    id: format!(
                        "{}/{index:03}-{}-{workload}{tag}-t{threads}{processes}-r{repeat}",
                        config.name,
                        kind.name()
                    ),
                    label: label.to_string(),
                    config: config.name.clone(),
                    db: db.clone(),
                    servers_dir: servers_dir.clone(),
                    servers: config.servers.clone(),
                    engine: engine.clone(),
                    kind,
                    workload: workload.to_string(),
                    threads,
                    clients,
                    launcher: launcher.get(),
                    until: until.get(),
                    repeat,
                    properties,
                });
            };
        let size = |text: &crate::plan::PropertyValue, what: &str| {
            super::parse_size(&text.to_string())
                .map(|b| scaled(b, scale).to_string())
                .map_err(|e| anyhow::anyhow!("{what}: {e}"))
        };
        let flag = |k: &str, v: String| (k.to_string(), v);
        if let Some(d) = plan.device.as_ref().filter(|d| d.corners) {
            let props = vec![
                flag("size", size(&d.size, "device.size")?),
                flag("runtime", scaled(d.runtime, scale).to_string()),
                flag("ramp", ((d.ramp as f64 * scale).round() as u64).to_string()),
            ];
            push(StepKind::Corners, "corners", "", 1, 1, 1, props);
        }
        if let Some(pre) = &plan.precondition {
            let mut props = vec![
                flag("size", size(&pre.fill, "precondition.fill")?),
                flag("passes", pre.passes.to_string()),
            ];
            if let Some(s) = &pre.steady {
                props.push(flag("steady", s.clone()));
                props.push(flag(
                    "round-seconds",
                    scaled(pre.round_seconds, scale).to_string(),
                ));
                props.push(flag("max-rounds", pre.max_rounds.to_string()));
            }
            push(StepKind::Precondition, "fill", "", 1, 1, 1, props);
        }
        for def in &plan.steps {
            let kind = if def.load {
                StepKind::Load
            } else {
                StepKind::Run
            };
            launcher.set(def.launcher.or(plan.launcher).unwrap_or_default());
            until.set(def.repeats.until());
            let mut per_workload = Vec::new();
            for workload in &def.workloads {
                let props = step_properties(loaded, config, def, workload, (&engine, kind), scale)?;
                per_workload.push((workload, props));
            }
            // Passes run the whole entry again (seed 002: each workload once
            // per pass, three passes); repeats run each cell again at once.
            for pass in 0..def.passes {
                for (workload, props) in &per_workload {
                    for &threads in &def.threads {
                        for repeat in 1..=def.repeats.most() {
                            push(
                                kind,
                                workload,
                                &def.label,
                                threads as u64,
                                def.clients,
                                pass * def.repeats.most() + repeat,
                                props.clone(),
                            );
                        }
                    }
                }
            }
        }
    }
    Ok(out)
}

/// A config's engine, and its `db` (overridden by `--db`): the engine's
/// data directory, or where the config's servers keep theirs when the
/// engine keeps none.
fn engine_and_dirs(
    plan: &Plan,
    config: &Config,
    db_overrides: &[(String, PathBuf)],
) -> (String, Option<PathBuf>, Option<PathBuf>) {
    let db = db_overrides
        .iter()
        .find(|(name, _)| *name == config.name)
        .map_or_else(|| config.db.clone(), |(_, dir)| Some(dir.clone()));
    let engine = config.engine.clone().unwrap_or_else(|| plan.engine.clone());
    // An unknown engine keeps `db` here; check_engines names it.
    let keeps_dir = crate::engine::find(&engine).map_or(true, |s| s.uses_data_dir());
    let (db, servers_dir) = if keeps_dir || config.servers.is_empty() {
        (db, None)
    } else {
        (None, db)
    };
    (engine, db, servers_dir)
}

/// One workload's properties in a `[[steps]]` entry: the workload's own
/// under the plan's, the config's and the entry's, with the server's port,
/// the entry's operations or duration, and the counts at `scale`.
fn step_properties(
    loaded: &LoadedPlan,
    config: &Config,
    def: &StepDef,
    workload: &str,
    (engine, kind): (&str, StepKind),
    scale: f64,
) -> anyhow::Result<Vec<(String, String)>> {
    let plan = &loaded.plan;
    let mut props = workload_properties(loaded, workload)?;
    for layer in [&plan.properties, &config.properties, &def.properties] {
        for (k, v) in layer {
            set(&mut props, k, &v.to_string());
        }
    }
    // The port of the config's server its engine talks to.
    let port = config
        .servers
        .iter()
        .filter(|s| crate::server::find(&s.name).is_ok_and(|k| k.engine == engine))
        .find_map(|s| s.port);
    if let Some(port) = port {
        set(&mut props, &format!("{engine}.port"), &port.to_string());
    }
    let (ops_key, duration_key) = step_keys(plan.driver);
    if let Some(ops) = def.operations {
        set(&mut props, ops_key, &ops.to_string());
    }
    if let Some(secs) = def.duration {
        set(&mut props, duration_key, &secs.to_string());
    }
    if kind == StepKind::Run {
        give_scaled_run_a_time(&mut props, plan, scale);
    }
    scale_counts(&mut props, plan, scale, &loaded.unscaled)?;
    if kind == StepKind::Load {
        let most = def.threads.iter().copied().max().unwrap_or(1).max(1) as u64;
        pace_scaled_load(&mut props, plan, scale, most * def.clients.max(1) as u64);
    }
    Ok(props)
}

impl Step {
    /// The directory whose device the step measures: the engine's data
    /// directory, or where the config's servers keep theirs.
    pub fn data_dir(&self) -> Option<&std::path::Path> {
        self.db.as_deref().or(self.servers_dir.as_deref())
    }
}

impl StepKind {
    /// The name in step ids and results lines (as serialized).
    pub fn name(self) -> &'static str {
        match self {
            StepKind::Corners => "corners",
            StepKind::Precondition => "precondition",
            StepKind::Load => "load",
            StepKind::Run => "run",
        }
    }
}

/// The workload's own properties: a shipped core workload or a file next
/// to the plan; none for db_bench benchmarks.
fn workload_properties(
    loaded: &LoadedPlan,
    workload: &str,
) -> anyhow::Result<Vec<(String, String)>> {
    if loaded.plan.driver == Driver::DbBench {
        return Ok(Vec::new());
    }
    let mut props = Properties::new();
    match CORE_WORKLOADS.iter().find(|(n, _)| *n == workload) {
        Some((_, text)) => props.load_str(text),
        None => {
            let path = loaded.dir().join(workload);
            if !path.is_file() {
                return Err(crate::error::InputError::Invalid(format!(
                    "plan '{}': workload file '{}' does not exist",
                    loaded.path.display(),
                    path.display()
                ))
                .into());
            }
            props.load_file(&path)?;
        }
    }
    // The workload class is YCSB's Java name; kvperf has only CoreWorkload.
    Ok(props
        .iter()
        .filter(|(k, _)| *k != "workload")
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect())
}

fn set(props: &mut Vec<(String, String)>, key: &str, value: &str) {
    match props.iter_mut().find(|(k, _)| k == key) {
        Some(entry) => entry.1 = value.to_string(),
        None => props.push((key.to_string(), value.to_string())),
    }
}

/// The step properties `--scale` changes, per driver (counts, then the
/// duration), and the device steps' sizes.
pub fn scaled_keys(driver: Driver) -> Vec<&'static str> {
    let counts: &[&str] = match driver {
        Driver::Ycsb => &YCSB_COUNTS,
        Driver::DbBench => &DB_BENCH_COUNTS,
    };
    let duration = step_keys(driver).1;
    let mut keys = counts.to_vec();
    keys.extend([duration, "size", "runtime", "round-seconds"]);
    keys
}

/// A step's operation-count and duration keys: YCSB `operationcount` and
/// `maxexecutiontime`, db_bench `--reads` and `--duration`.
pub fn step_keys(driver: Driver) -> (&'static str, &'static str) {
    match driver {
        Driver::Ycsb => ("operationcount", "maxexecutiontime"),
        Driver::DbBench => ("reads", "duration"),
    }
}

/// A scaled YCSB run step that the plan gives no time (seed 000's runs
/// end on their operation count) lasts the plan's floor, `min_duration`:
/// its operation count, shrunk with the data, would end it in a second or
/// two, a window too short to judge. [`scale_counts`] then lifts the count
/// (operationcount 0), as for any duration the floor raised. A plan
/// without a floor (`min_duration` 1, the default) keeps its counts.
fn give_scaled_run_a_time(props: &mut Vec<(String, String)>, plan: &Plan, scale: f64) {
    let (_, duration_key) = step_keys(plan.driver);
    let timed = props.iter().any(|(k, _)| k == duration_key);
    if plan.driver == Driver::Ycsb && scale < 1.0 && plan.min_duration > 1 && !timed {
        set(props, duration_key, &plan.min_duration.to_string());
    }
}

/// A scaled YCSB load of a plan with a floor (`min_duration`) is paced so
/// that its window lasts the floor: it ends on its records, which a
/// scaled data set inserts in well under a second (seed 000 at `--scale
/// 0.0001`: 25,000 records in 0.4 s), a window too short to judge. A
/// longer load would insert more records than the study's data set, and
/// a repeated one would overwrite (or fail on) the keys it inserted: so
/// the records are spread over the floor instead, at
/// `target = (records - clients) / min_duration`, which puts the last
/// operation of the busiest client at or after the floor. Its ops/s is
/// then that pace, and its latency from the intended start is shown with
/// the actual start's beside it (docs/your-ssd.md). A target or time of
/// the plan's, or `--set`, is kept.
fn pace_scaled_load(props: &mut Vec<(String, String)>, plan: &Plan, scale: f64, clients: u64) {
    let given = |key: &str| props.iter().any(|(k, _)| k == key);
    if plan.driver != Driver::Ycsb
        || scale >= 1.0
        || plan.min_duration <= 1
        || given("target")
        || given("maxexecutiontime")
    {
        return;
    }
    let count = |key: &str| {
        props
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.trim().parse::<u64>().ok())
    };
    let Some(records) = count("insertcount").or_else(|| count("recordcount")) else {
        return;
    };
    let target = (records.saturating_sub(clients) / plan.min_duration).max(1);
    set(props, "target", &target.to_string());
}

/// Scales the counts and the duration of `props`, except those in
/// `unscaled` (given by `--set`: the user's own values win).
fn scale_counts(
    props: &mut [(String, String)],
    plan: &Plan,
    scale: f64,
    unscaled: &[String],
) -> anyhow::Result<()> {
    let (driver, min_duration) = (plan.driver, plan.min_duration);
    let counts: &[&str] = match driver {
        Driver::Ycsb => &YCSB_COUNTS,
        Driver::DbBench => &DB_BENCH_COUNTS,
    };
    let (ops_key, duration) = step_keys(driver);
    let mut floored = false;
    for (key, value) in props.iter_mut() {
        if !(counts.contains(&key.as_str()) || key == duration) || unscaled.contains(key) {
            continue;
        }
        // A duration may carry its unit ("10m"); scaled in whole seconds.
        let n: i64 = match value.trim().parse() {
            Ok(n) => n,
            Err(_) if key == duration => crate::units::parse_duration(value)
                .map(|d| d.as_secs_f64().round() as i64)
                .map_err(|e| {
                    crate::error::InputError::Invalid(format!("plan property {key}: {e}"))
                })?,
            Err(_) => {
                return Err(crate::error::InputError::Invalid(format!(
                    "plan property {key} = '{value}' is not a whole number"
                ))
                .into())
            }
        };
        if n > 0 && n as f64 * scale >= u64::MAX as f64 {
            // `scaled` would saturate to 2^64 - 1, which no step can run.
            return Err(crate::error::InputError::Invalid(format!(
                "--scale {scale:e} makes plan property {key} = {n} too large to count; give a smaller --scale"
            ))
            .into());
        }
        if n > 0 {
            let mut shrunk = scaled(n as u64, scale);
            if key == duration {
                // Never below the plan's floor, nor above the unscaled value.
                let floor = min_duration.min(n as u64);
                floored |= shrunk < floor;
                shrunk = shrunk.max(floor);
            }
            *value = shrunk.to_string();
        }
    }
    // When the plan's floor raised a scaled duration, the YCSB run lasts
    // that time: its operation count, shrunk with the data, would end it
    // first (seed 002's 200 k operations take about a second at 96
    // threads), and a window that short says nothing. db_bench's
    // --duration already governs.
    // A duration the user gave (`--set duration=60s`) governs a scaled
    // run the same way: it is what they asked the window to last.
    let user_timed = scale < 1.0
        && unscaled.iter().any(|k| k == duration)
        && props.iter().any(|(k, _)| k == duration);
    if (floored || user_timed) && driver == Driver::Ycsb && !unscaled.iter().any(|k| k == ops_key) {
        for (key, value) in props.iter_mut() {
            if key == ops_key {
                *value = "0".into();
            }
        }
    }
    Ok(())
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// `n * scale`, at least 1: a scaled plan never asks for nothing.
fn scaled(n: u64, scale: f64) -> u64 {
    ((n as f64 * scale).round() as u64).max(1)
}

/// Identity of a plan at a scale: results written under another fingerprint
/// belong to another study and are never mixed in.
pub fn fingerprint(plan: &Plan, scale: f64, steps: &[Step]) -> String {
    crate::fingerprint::of(&serde_json::json!({ "plan": plan, "scale": scale, "steps": steps }))
}

/// `--db NAME=DIR`, repeatable: the plan runs the configurations named,
/// in that order, and no other. NAME is a config of the plan (its settings,
/// on DIR) or a new name, which takes the settings of the plan's first
/// config, unless it is one typo away from a config's name (refused with
/// a did-you-mean). Returns a note for each new name.
pub fn select_configs(
    plan: &mut Plan,
    db_overrides: &[(String, PathBuf)],
) -> Result<Vec<String>, String> {
    if db_overrides.is_empty() {
        return Ok(Vec::new());
    }
    let names: Vec<&str> = plan.configs.iter().map(|c| c.name.as_str()).collect();
    let mut notes = Vec::new();
    let mut chosen: Vec<super::Config> = Vec::new();
    for (name, _) in db_overrides {
        if chosen.iter().any(|c| c.name == *name) {
            return Err(format!("--db {name}=...: config '{name}' is named twice"));
        }
        let config = match plan.configs.iter().find(|c| c.name == *name) {
            Some(own) => own.clone(),
            None => {
                let first = &plan.configs[0];
                // A typo of a config's name is a mistake, not a new config.
                if let Some(near) = did_you_mean(name, names.iter().copied()) {
                    return Err(format!(
                        "--db {name}=DIR: the plan has no config '{name}' (did you mean '{near}'?); its configs: {}; a new name takes the first one's settings but must not be a typo away from them",
                        names.join(", ")
                    ));
                }
                notes.push(format!(
                    "--db {name}=DIR: the plan has no config '{name}'; it runs with the settings of config '{}' (the plan's configs: {})",
                    first.name,
                    names.join(", ")
                ));
                super::Config {
                    name: name.clone(),
                    ..first.clone()
                }
            }
        };
        chosen.push(config);
    }
    plan.configs = chosen;
    Ok(notes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn load(text: &str) -> LoadedPlan {
        LoadedPlan {
            plan: super::super::parse(text).unwrap(),
            path: Path::new("plans/test.toml").to_path_buf(),
            unscaled: Vec::new(),
        }
    }

    const PLAN: &str = r#"
name = "t"
driver = "ycsb"
[properties]
recordcount = 1000000
operationcount = 500000
fieldcount = 4
[precondition]
fill = "1GB"
[[configs]]
name = "fast"
db = "/a"
[[configs]]
name = "slow"
db = "/b"
properties = { "rocksdb.compression" = "none" }
[[steps]]
load = true
workloads = ["a"]
threads = [8]
[[steps]]
workloads = ["a", "c"]
threads = [4, 8]
repeats = 2
duration = 600
"#;

    #[test]
    fn expands_configs_workloads_threads_repeats_in_order() {
        let steps = steps(&load(PLAN), 1.0, &[]).unwrap();
        // Per config: precondition, load, 2 workloads x 2 threads x 2 repeats.
        assert_eq!(steps.len(), 2 * (1 + 1 + 8));
        assert_eq!(steps[0].id, "fast/000-precondition-fill-t1-r1");
        assert_eq!(steps[1].kind, StepKind::Load);
        assert_eq!(steps[2].id, "fast/002-run-a-t4-r1");
        assert_eq!(steps[3].id, "fast/003-run-a-t4-r2");
        assert_eq!(steps[4].threads, 8);
        assert_eq!(steps[10].config, "slow");
        let ids: std::collections::BTreeSet<_> = steps.iter().map(|s| &s.id).collect();
        assert_eq!(ids.len(), steps.len(), "ids are unique");
    }

    #[test]
    fn properties_merge_workload_then_plan_then_config() {
        let steps = steps(&load(PLAN), 1.0, &[]).unwrap();
        let get = |s: &Step, k: &str| {
            s.properties
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
        };
        let c = &steps[6];
        assert_eq!(c.workload, "c");
        assert_eq!(get(c, "readproportion").as_deref(), Some("1"));
        assert_eq!(
            get(c, "fieldcount").as_deref(),
            Some("4"),
            "plan beats workload file"
        );
        assert_eq!(get(c, "maxexecutiontime").as_deref(), Some("600"));
        assert_eq!(
            get(&steps[12], "rocksdb.compression").as_deref(),
            Some("none")
        );
        assert_eq!(get(c, "rocksdb.compression"), None);
        assert_eq!(get(c, "workload"), None);
    }

    #[test]
    fn properties_set_by_hand_are_not_scaled() {
        let mut plan = load(PLAN);
        plan.unscaled = vec!["recordcount".into(), "operationcount".into()];
        let steps = steps(&plan, 0.001, &[]).unwrap();
        let get = |s: &Step, k: &str| s.properties.iter().find(|(n, _)| n == k).unwrap().1.clone();
        assert_eq!(get(&steps[2], "recordcount"), "1000000");
        assert_eq!(
            get(&steps[2], "operationcount"),
            "500000",
            "not zeroed by the floor"
        );
        assert_eq!(get(&steps[2], "maxexecutiontime"), "1", "still scaled");
    }

    #[test]
    fn scale_shrinks_counts_and_durations_not_threads() {
        let steps = steps(&load(PLAN), 0.001, &[]).unwrap();
        let get = |s: &Step, k: &str| s.properties.iter().find(|(n, _)| n == k).unwrap().1.clone();
        assert_eq!(get(&steps[2], "recordcount"), "1000");
        assert_eq!(get(&steps[2], "operationcount"), "500");
        assert_eq!(get(&steps[2], "maxexecutiontime"), "1");
        assert_eq!(get(&steps[2], "fieldcount"), "4");
        assert_eq!(steps[2].threads, 4);
        assert_eq!(
            steps[0].properties[0],
            ("size".to_string(), "1000000".to_string())
        );
    }

    #[test]
    fn plan_durations_and_sizes_take_units() {
        let text = PLAN
            .replace(
                "fieldcount = 4\n",
                "fieldcount = 4\nmaxexecutiontime = \"10m\"\n",
            )
            .replace("duration = 600\n", "")
            .replace("fill = \"1GB\"", "fill = \"1G\"");
        let steps = steps(&load(&text), 0.5, &[]).unwrap();
        let get = |s: &Step, k: &str| s.properties.iter().find(|(n, _)| n == k).unwrap().1.clone();
        assert_eq!(get(&steps[2], "maxexecutiontime"), "300");
        assert_eq!(get(&steps[0], "size"), (1u64 << 29).to_string());
        let bad = PLAN.replace(
            "fieldcount = 4\n",
            "fieldcount = 4\nmaxexecutiontime = \"soon\"\n",
        );
        let err = steps_err(&load(&bad));
        assert!(
            err.contains("maxexecutiontime") && err.contains("not a duration"),
            "{err}"
        );
    }

    fn steps_err(plan: &LoadedPlan) -> String {
        format!("{:#}", steps(plan, 0.5, &[]).unwrap_err())
    }

    #[test]
    fn scaled_durations_stop_at_the_plans_floor() {
        let text = PLAN.replace(
            "driver = \"ycsb\"\n",
            "driver = \"ycsb\"\nmin_duration = 30\n",
        );
        let steps = steps(&load(&text), 0.001, &[]).unwrap();
        let get = |s: &Step, k: &str| s.properties.iter().find(|(n, _)| n == k).unwrap().1.clone();
        assert_eq!(get(&steps[2], "maxexecutiontime"), "30");
        assert_eq!(
            get(&steps[2], "operationcount"),
            "0",
            "the time governs: the run lasts its floor, not until 500 operations"
        );
        assert_eq!(get(&steps[2], "recordcount"), "1000", "counts still shrink");
        let short = text.replace("duration = 600", "duration = 20");
        let steps = super::steps(&load(&short), 0.001, &[]).unwrap();
        assert_eq!(
            get(&steps[2], "maxexecutiontime"),
            "20",
            "never above the plan's own"
        );
    }

    /// The load step of `text` at full scale.
    fn full_load_target(text: &str) -> Step {
        steps(&load(text), 1.0, &[]).unwrap().remove(1)
    }

    #[test]
    fn a_scaled_run_without_a_time_lasts_the_plans_floor() {
        let text = PLAN
            .replace(
                "driver = \"ycsb\"\n",
                "driver = \"ycsb\"\nmin_duration = \"10s\"\n",
            )
            .replace("duration = 600\n", "");
        let get = |s: &Step, k: &str| {
            s.properties
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
        };
        let scaled = steps(&load(&text), 0.001, &[]).unwrap();
        assert_eq!(get(&scaled[2], "maxexecutiontime").as_deref(), Some("10"));
        assert_eq!(get(&scaled[2], "operationcount").as_deref(), Some("0"));
        assert_eq!(
            get(&scaled[1], "maxexecutiontime"),
            None,
            "a load ends on its records"
        );
        // ... paced so that its 1,000 records last the floor: the busiest
        // of its 8 clients inserts its 125th at 124 x 8 / 99 = 10.02 s.
        assert_eq!(get(&scaled[1], "target").as_deref(), Some("99"));
        assert_eq!(get(&scaled[2], "target"), None, "a run is timed, not paced");
        let own = load(&text.replace(
            "threads = [8]",
            "threads = [8]\nproperties = { target = 7 }",
        ));
        let own = steps(&own, 0.001, &[]).unwrap();
        assert_eq!(
            get(&own[1], "target").as_deref(),
            Some("7"),
            "the plan's own target"
        );
        let mut unfloored = load(&text);
        unfloored.plan.min_duration = 1;
        let unfloored = steps(&unfloored, 0.001, &[]).unwrap();
        assert_eq!(get(&unfloored[1], "target"), None, "no floor: unpaced");
        assert_eq!(
            get(&full_load_target(&text), "target"),
            None,
            "full scale: unpaced"
        );
        let full = steps(&load(&text), 1.0, &[]).unwrap();
        assert_eq!(
            get(&full[2], "maxexecutiontime"),
            None,
            "full scale: the brief's counts"
        );
        assert_eq!(get(&full[2], "operationcount").as_deref(), Some("500000"));
        // Without a floor, a scaled plan keeps its counts.
        let unfloored = steps(&load(&PLAN.replace("duration = 600\n", "")), 0.001, &[]).unwrap();
        assert_eq!(get(&unfloored[2], "maxexecutiontime"), None);
        assert_eq!(get(&unfloored[2], "operationcount").as_deref(), Some("500"));
    }

    #[test]
    fn a_duration_set_by_hand_governs_a_scaled_run() {
        let mut plan = load(PLAN);
        plan.unscaled = vec!["maxexecutiontime".into()];
        let steps = steps(&plan, 0.001, &[]).unwrap();
        let get = |s: &Step, k: &str| s.properties.iter().find(|(n, _)| n == k).unwrap().1.clone();
        assert_eq!(
            get(&steps[2], "maxexecutiontime"),
            "600",
            "the user's, unscaled"
        );
        assert_eq!(get(&steps[2], "operationcount"), "0", "the time governs");
    }

    #[test]
    fn fingerprint_changes_with_plan_and_scale() {
        let p = load(PLAN);
        let s1 = steps(&p, 1.0, &[]).unwrap();
        let f1 = fingerprint(&p.plan, 1.0, &s1);
        assert_eq!(f1, fingerprint(&p.plan, 1.0, &s1));
        let s2 = steps(&p, 0.5, &[]).unwrap();
        assert_ne!(f1, fingerprint(&p.plan, 0.5, &s2));
        let other = load(&PLAN.replace("[4, 8]", "[4, 16]"));
        let s3 = steps(&other, 1.0, &[]).unwrap();
        assert_ne!(f1, fingerprint(&other.plan, 1.0, &s3));
        // Notes are for the report: editing them keeps results valid.
        let mut noted = load(PLAN);
        noted.plan.notes = "Not reproduced: a third device".into();
        assert_eq!(f1, fingerprint(&noted.plan, 1.0, &s1));
    }

    #[test]
    fn passes_run_every_workload_again_and_number_repeats_across_them() {
        let text = PLAN.replace("repeats = 2\n", "repeats = 2\npasses = 3\n");
        let s = steps(&load(&text), 1.0, &[]).unwrap();
        let fast: Vec<_> = s.iter().filter(|s| s.config == "fast").collect();
        // precondition, load, 3 passes x 2 workloads x 2 threads x 2 repeats.
        assert_eq!(fast.len(), 2 + 24);
        let order: Vec<_> = fast[2..]
            .iter()
            .map(|s| format!("{}{}r{}", s.workload, s.threads, s.repeat))
            .collect();
        assert_eq!(
            order[..8],
            ["a4r1", "a4r2", "a8r1", "a8r2", "c4r1", "c4r2", "c8r1", "c8r2"]
        );
        assert_eq!(order[8], "a4r3", "the second pass starts over");
        assert_eq!(order[23], "c8r6");
    }

    #[test]
    fn a_configs_server_port_reaches_the_engine_that_talks_to_it() {
        let text = PLAN.replace(
            "db = \"/b\"\n",
            "engine = \"redis\"\nservers = [{ name = \"redis\", port = 7001 }]\n",
        );
        let s = steps(&load(&text), 1.0, &[]).unwrap();
        let slow = s
            .iter()
            .find(|s| s.config == "slow" && s.kind == StepKind::Load);
        let slow = slow.unwrap();
        assert_eq!(slow.servers.len(), 1);
        let port = slow.properties.iter().find(|(k, _)| k == "redis.port");
        assert_eq!(port.map(|(_, v)| v.as_str()), Some("7001"));
        let fast = s
            .iter()
            .find(|s| s.config == "fast" && s.kind == StepKind::Load);
        let fast = fast.unwrap();
        assert!(fast.properties.iter().all(|(k, _)| !k.ends_with(".port")));
    }

    #[test]
    fn db_runs_only_the_configs_it_names() {
        let mut p = load(PLAN);
        let db = [("slow".into(), "/c".into())];
        assert!(select_configs(&mut p.plan, &db).unwrap().is_empty());
        let s = steps(&p, 1.0, &db).unwrap();
        assert!(s.iter().all(|s| s.config == "slow"), "fast is dropped");
        assert!(s.iter().all(|s| s.db.as_deref() == Some(Path::new("/c"))));
        let slow = s.iter().find(|s| s.kind == StepKind::Run).unwrap();
        assert!(slow
            .properties
            .iter()
            .any(|(k, v)| k == "rocksdb.compression" && v == "none"));
    }

    #[test]
    fn db_with_a_new_name_takes_the_first_configs_settings() {
        let mut p = load(PLAN);
        let typo = [("slwo".into(), "/d".into())];
        let err = select_configs(&mut p.plan.clone(), &typo).unwrap_err();
        assert!(err.contains("did you mean 'slow'"), "{err}");
        let db = [
            ("mine".into(), "/mnt/nvme".into()),
            ("slow".into(), "/d".into()),
        ];
        let notes = select_configs(&mut p.plan, &db).unwrap();
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].contains("settings of config 'fast'"),
            "{}",
            notes[0]
        );
        let s = steps(&p, 1.0, &db).unwrap();
        let configs: Vec<&str> = s.iter().map(|s| s.config.as_str()).collect();
        assert!(
            configs.iter().all(|c| ["mine", "slow"].contains(c)),
            "{configs:?}"
        );
        assert!(s[0].id.starts_with("mine/"), "{}", s[0].id);
        assert_eq!(s[0].db.as_deref(), Some(Path::new("/mnt/nvme")));
        let mut twice = load(PLAN);
        let db = [("fast".into(), "/a".into()), ("fast".into(), "/b".into())];
        assert!(select_configs(&mut twice.plan, &db)
            .unwrap_err()
            .contains("named twice"));
    }
}
