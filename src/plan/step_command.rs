//! The plan-to-step hop, typed: every child kvperf a plan runs (a YCSB
//! load or run, a db_bench benchmark, a device measurement, a settle, a
//! server started or stopped) as one [`StepCommand`]. The plan builds
//! them; [`StepCommand::args`] renders the child's command line; the
//! command line's parser reads it back into the same value
//! (`cli::step_command`, with a round-trip test over every variant). The
//! child stays a process of its own: a crash ends one step, and a rerun
//! resumes from the results file.

use std::path::{Path, PathBuf};

use super::expand::{Step, StepKind};
use super::{Driver, Settle};

/// One child kvperf of a plan, without the program name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepCommand {
    /// `kvperf load|run`, YCSB's phases.
    Ycsb(YcsbStep),
    /// `kvperf bench`, db_bench's benchmarks.
    Bench(BenchStep),
    /// `kvperf device corners|precondition`.
    Device(DeviceStep),
    /// `kvperf settle`, before a YCSB run when the plan settles.
    Settle(SettleStep),
    /// `kvperf server start`, the servers a configuration needs.
    ServerStart(ServerStep),
    /// `kvperf server stop`: the name and directory of a started server.
    ServerStop { name: String, dir: PathBuf },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum YcsbPhase {
    Load,
    Run,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YcsbStep {
    pub phase: YcsbPhase,
    pub engine: String,
    pub db: Option<PathBuf>,
    pub fresh: bool,
    pub threads: u64,
    /// `-p KEY=VALUE`, in order.
    pub properties: Vec<(String, String)>,
    /// The JSON output (`--format json --output FILE`).
    pub output: PathBuf,
    /// `--shard I/N`: client I of N of a step with clients.
    pub shard: Option<(u32, u32)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchStep {
    pub engine: String,
    pub db: Option<PathBuf>,
    /// `--benchmarks=LIST`, comma-separated.
    pub benchmarks: String,
    pub threads: u64,
    pub use_existing_db: bool,
    pub drop_caches: bool,
    /// db_bench's other flags, `--FLAG=VALUE` as the plan gives them.
    pub flags: Vec<(String, String)>,
    /// `--json=FILE`.
    pub json: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceKind {
    Corners,
    Precondition,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceStep {
    pub kind: DeviceKind,
    /// The data directory whose device is measured (a plan refuses a
    /// device step without one before any runs; `plan show` shows it).
    pub dir: Option<PathBuf>,
    /// `--FLAG VALUE`, in order.
    pub flags: Vec<(String, String)>,
    /// The JSON output (`--format json --output FILE`).
    pub output: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettleStep {
    pub engine: String,
    pub compact: bool,
    pub db: Option<PathBuf>,
    /// The engine's own `-p ENGINE.KEY=VALUE` options, in order.
    pub properties: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStep {
    pub name: String,
    pub dir: PathBuf,
    pub nodes: u32,
    pub port: Option<u16>,
    /// `-p KEY=VALUE`, in order.
    pub settings: Vec<(String, String)>,
}

impl StepCommand {
    /// The command of a plan's `step` (a load, run or device step), its
    /// result written to `json`.
    pub fn of_step(
        driver: Driver,
        settle: Settle,
        drop_caches: bool,
        step: &Step,
        json: &Path,
    ) -> Self {
        let kind = match step.kind {
            StepKind::Corners => Some(DeviceKind::Corners),
            StepKind::Precondition => Some(DeviceKind::Precondition),
            StepKind::Load | StepKind::Run => None,
        };
        if let Some(kind) = kind {
            return Self::Device(DeviceStep {
                kind,
                dir: step.data_dir().map(Path::to_path_buf),
                flags: step.properties.clone(),
                output: json.to_path_buf(),
            });
        }
        let load = step.kind == StepKind::Load;
        match driver {
            Driver::Ycsb => Self::Ycsb(YcsbStep {
                phase: if load {
                    YcsbPhase::Load
                } else {
                    YcsbPhase::Run
                },
                engine: step.engine.clone(),
                db: step.db.clone(),
                // Several clients share one store, which the runner
                // empties once before they start.
                fresh: load && step.clients == 1,
                threads: step.threads,
                properties: step.properties.clone(),
                output: json.to_path_buf(),
                shard: None,
            }),
            Driver::DbBench => Self::Bench(BenchStep {
                engine: step.engine.clone(),
                db: step.db.clone(),
                benchmarks: if settle.waits() && !load {
                    format!("waitforcompaction,{}", step.workload)
                } else {
                    step.workload.clone()
                },
                threads: step.threads,
                use_existing_db: !load,
                drop_caches: drop_caches && !load,
                flags: step.properties.clone(),
                json: json.to_path_buf(),
            }),
        }
    }

    /// The settle before a YCSB run of `step`: its engine, store and the
    /// engine's own options.
    pub fn settle(step: &Step, compact: bool) -> Self {
        let prefix = format!("{}.", step.engine);
        Self::Settle(SettleStep {
            engine: step.engine.clone(),
            compact,
            db: step.db.clone(),
            properties: step
                .properties
                .iter()
                .filter(|(k, _)| k.starts_with(&prefix))
                .cloned()
                .collect(),
        })
    }

    /// This command as client `index` of `of` (`--shard I/N`); only a
    /// YCSB step runs in shards, so any other is left as it is.
    pub fn shard(mut self, index: u32, of: u32) -> Self {
        if let Self::Ycsb(y) = &mut self {
            y.shard = Some((index, of));
        }
        self
    }

    /// The child's command line, without the program.
    pub fn args(&self) -> Vec<String> {
        match self {
            Self::Ycsb(y) => y.args(),
            Self::Bench(b) => b.args(),
            Self::Device(d) => d.args(),
            Self::Settle(s) => s.args(),
            Self::ServerStart(s) => {
                let mut args = vec!["server".to_string(), "start".into()];
                args.extend(s.words());
                args
            }
            Self::ServerStop { name, dir } => vec![
                "server".into(),
                "stop".into(),
                name.clone(),
                "--dir".into(),
                dir.display().to_string(),
            ],
        }
    }
}

/// `--format json --output FILE`.
fn json_output(args: &mut Vec<String>, output: &Path) {
    args.extend(["--format".into(), "json".into()]);
    args.extend(["--output".into(), output.display().to_string()]);
}

/// `-p KEY=VALUE` each.
fn dash_p(args: &mut Vec<String>, properties: &[(String, String)]) {
    for (k, v) in properties {
        args.extend(["-p".into(), format!("{k}={v}")]);
    }
}

impl YcsbStep {
    fn args(&self) -> Vec<String> {
        let phase = match self.phase {
            YcsbPhase::Load => "load",
            YcsbPhase::Run => "run",
        };
        let mut args = vec![phase.to_string(), "--engine".into(), self.engine.clone()];
        if let Some(db) = &self.db {
            args.extend(["--db".into(), db.display().to_string()]);
        }
        if self.fresh {
            args.push("--fresh".into());
        }
        args.extend(["--threads".into(), self.threads.to_string()]);
        dash_p(&mut args, &self.properties);
        json_output(&mut args, &self.output);
        if let Some((i, n)) = self.shard {
            args.extend(["--shard".into(), format!("{i}/{n}")]);
        }
        args
    }
}

impl BenchStep {
    fn args(&self) -> Vec<String> {
        let mut args = vec!["bench".to_string(), format!("--engine={}", self.engine)];
        if let Some(db) = &self.db {
            args.push(format!("--db={}", db.display()));
        }
        args.push(format!("--benchmarks={}", self.benchmarks));
        args.push(format!("--threads={}", self.threads));
        args.push(format!(
            "--use_existing_db={}",
            u8::from(self.use_existing_db)
        ));
        if self.drop_caches {
            args.push("--drop_caches=1".into());
        }
        for (k, v) in &self.flags {
            args.push(format!("--{k}={v}"));
        }
        args.push(format!("--json={}", self.json.display()));
        args
    }
}

impl DeviceStep {
    fn args(&self) -> Vec<String> {
        let kind = match self.kind {
            DeviceKind::Corners => StepKind::Corners,
            DeviceKind::Precondition => StepKind::Precondition,
        };
        let mut args = vec!["device".to_string(), kind.name().to_string()];
        if let Some(dir) = &self.dir {
            args.push(dir.display().to_string());
        }
        for (k, v) in &self.flags {
            args.extend([format!("--{k}"), v.clone()]);
        }
        json_output(&mut args, &self.output);
        args
    }
}

impl SettleStep {
    fn args(&self) -> Vec<String> {
        let mut args = vec!["settle".to_string(), "--engine".into(), self.engine.clone()];
        if self.compact {
            args.push("--compact".into());
        }
        if let Some(db) = &self.db {
            args.extend(["--db".into(), db.display().to_string()]);
        }
        dash_p(&mut args, &self.properties);
        args
    }
}

impl ServerStep {
    /// `NAME --dir DIR --nodes N [--port P] -p KEY=VALUE...`: what follows
    /// `kvperf server start`.
    pub fn words(&self) -> Vec<String> {
        let mut args = vec![
            self.name.clone(),
            "--dir".into(),
            self.dir.display().to_string(),
        ];
        args.extend(["--nodes".into(), self.nodes.to_string()]);
        if let Some(port) = self.port {
            args.extend(["--port".into(), port.to_string()]);
        }
        dash_p(&mut args, &self.settings);
        args
    }

    /// The command that stops this server.
    pub fn stop(&self) -> StepCommand {
        StepCommand::ServerStop {
            name: self.name.clone(),
            dir: self.dir.clone(),
        }
    }
}
