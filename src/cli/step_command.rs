//! The command line read back into the [`StepCommand`] a plan rendered:
//! the same parser a child kvperf runs (the dialect's rewriting, then
//! clap), then the parsed arguments turned into the plan's type. With the
//! round-trip test over every variant, a field the plan renders and the
//! command line drops (or reads otherwise) fails here, not in a study.

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::Context;
use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches};

use super::{Cli, Command};
use crate::commands::device::DeviceCommand;
use crate::commands::server::ServerCommand;
use crate::commands::ycsb::YcsbArgs;
use crate::output::Format;
use crate::plan::step_command::{
    BenchStep, DeviceKind, DeviceStep, ServerStep, SettleStep, StepCommand, YcsbPhase, YcsbStep,
};

/// The arguments of `kvperf bench` a [`BenchStep`] holds as fields.
const BENCH_FIELDS: [&str; 7] = [
    "engine",
    "db",
    "benchmarks",
    "threads",
    "use_existing_db",
    "drop_caches",
    "json",
];

/// `args` (a child's command line without the program) as the
/// [`StepCommand`] that renders it; an error for a command line no plan
/// step has.
pub(crate) fn step_command(args: &[String]) -> anyhow::Result<StepCommand> {
    let words = std::iter::once("kvperf".into()).chain(args.iter().map(OsString::from));
    let rewritten = crate::dialect::rewrite(words, &Cli::command())?;
    let matches = Cli::command().try_get_matches_from(rewritten.args)?;
    let cli = Cli::from_arg_matches(&matches)?;
    let (name, sub) = matches.subcommand().context("no subcommand")?;
    let not_a_step = || anyhow::anyhow!("`kvperf {name}` is not a plan step's command");
    Ok(match cli.command {
        Command::Load(a) => StepCommand::Ycsb(ycsb(a, YcsbPhase::Load)?),
        Command::Run(a) => StepCommand::Ycsb(ycsb(a, YcsbPhase::Run)?),
        Command::Bench(b) => StepCommand::Bench(BenchStep {
            flags: given_flags(sub, &BENCH_FIELDS.map(String::from), &[name]),
            engine: b.engine,
            db: b.db,
            benchmarks: b.benchmarks,
            threads: b.threads.into(),
            use_existing_db: b.use_existing_db,
            drop_caches: b.drop_caches,
            json: b.json.context("a bench step writes --json")?,
        }),
        Command::Device(device) => {
            let (kind_name, _) = sub.subcommand().context("no device subcommand")?;
            let named = ["target", "dir", "format", "output"].map(String::from);
            let (kind, dir, format, output) = match device {
                DeviceCommand::Corners(c) => (DeviceKind::Corners, c.target, c.format, c.output),
                DeviceCommand::Precondition(p) => {
                    (DeviceKind::Precondition, p.dir, p.format, p.output)
                }
            };
            let (_, inner) = sub.subcommand().context("no device subcommand")?;
            DeviceStep {
                kind,
                dir: Some(dir),
                flags: given_flags(inner, &named, &[name, kind_name]),
                output: json_output(format, output)?,
            }
            .into()
        }
        Command::Settle(s) => StepCommand::Settle(SettleStep {
            engine: s.engine,
            compact: s.compact,
            db: s.db,
            properties: pairs(&s.properties)?,
        }),
        Command::Server(ServerCommand::Start(a)) => StepCommand::ServerStart(ServerStep {
            dir: a.dir.context("a plan starts a server in its --dir")?,
            name: a.name,
            nodes: a.nodes,
            port: a.port,
            settings: pairs(&a.settings)?,
        }),
        Command::Server(ServerCommand::Stop(a)) => StepCommand::ServerStop {
            dir: a.dir.context("a plan stops a server in its --dir")?,
            name: a.name,
        },
        _ => return Err(not_a_step()),
    })
}

impl From<DeviceStep> for StepCommand {
    fn from(step: DeviceStep) -> Self {
        Self::Device(step)
    }
}

fn ycsb(a: YcsbArgs, phase: YcsbPhase) -> anyhow::Result<YcsbStep> {
    let shard = match a.shard.as_deref() {
        None => None,
        Some(text) => {
            let (i, n) = text.split_once('/').context("--shard I/N")?;
            Some((i.parse()?, n.parse()?))
        }
    };
    Ok(YcsbStep {
        phase,
        engine: a.engine,
        db: a.db,
        fresh: a.fresh,
        threads: a.threads.context("a plan's step gives --threads")?,
        properties: pairs(&a.properties)?,
        output: json_output(a.format, a.output)?,
        shard,
    })
}

/// `--format json --output FILE`: how every measured step hands back its result.
fn json_output(format: Format, output: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    match (format, output) {
        (Format::Json, Some(path)) => Ok(path),
        _ => anyhow::bail!("a plan's step writes --format json --output FILE"),
    }
}

/// `KEY=VALUE` words as pairs, split at the first `=`.
fn pairs(words: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    words
        .iter()
        .map(|w| {
            w.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .with_context(|| format!("'{w}' is not KEY=VALUE"))
        })
        .collect()
}

/// The flags given on the command line to the subcommand at `path` (the
/// arguments `matches` holds), except the `named` ones the step's type
/// holds as fields: each as (long name, its text as typed), in the order
/// they were given.
fn given_flags(matches: &ArgMatches, named: &[String], path: &[&str]) -> Vec<(String, String)> {
    let mut command = Cli::command();
    for name in path {
        command = command
            .find_subcommand(name)
            .cloned()
            .expect("a subcommand clap just matched");
    }
    let mut flags: Vec<(usize, String, String)> = command
        .get_arguments()
        .filter(|arg| !named.iter().any(|n| n == arg.get_id().as_str()))
        .filter_map(|arg| {
            let id = arg.get_id().as_str();
            if matches.value_source(id) != Some(ValueSource::CommandLine) {
                return None;
            }
            let value = matches
                .get_raw(id)?
                .next_back()?
                .to_string_lossy()
                .into_owned();
            Some((matches.index_of(id)?, arg.get_long()?.to_string(), value))
        })
        .collect();
    flags.sort_by_key(|(index, _, _)| *index);
    flags.into_iter().map(|(_, k, v)| (k, v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::step_command::StepCommand as S;

    /// Every variant's case: a new variant fails to compile here until it
    /// has a number, and the test below until it has a case.
    fn variant(c: &S) -> usize {
        match c {
            S::Ycsb(_) => 0,
            S::Bench(_) => 1,
            S::Device(_) => 2,
            S::Settle(_) => 3,
            S::ServerStart(_) => 4,
            S::ServerStop { .. } => 5,
        }
    }
    const VARIANTS: usize = 6;

    fn odd(path: &str) -> PathBuf {
        PathBuf::from(format!("/tmp/kv perf=ü/{path} dé=1"))
    }

    fn kv(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Every field away from its default, with spaces, `=`, non-ASCII
    /// paths and negative numbers; a credential last, as a child gets it
    /// from its environment.
    fn cases() -> Vec<S> {
        let ycsb = |phase, fresh, shard| {
            S::Ycsb(YcsbStep {
                phase,
                engine: "redis".into(),
                db: Some(odd("db")),
                fresh,
                threads: 7,
                properties: kv(&[
                    ("recordcount", "1000"),
                    ("insertstart", "-5"),
                    ("label", "a b=c ü"),
                    ("redis.password", "S3cr3t pass=word"),
                ]),
                output: odd("out.json"),
                shard,
            })
        };
        let device = |kind, flags: &[(&str, &str)]| {
            S::Device(DeviceStep {
                kind,
                dir: Some(odd("dev")),
                flags: kv(flags),
                output: odd("device.json"),
            })
        };
        let server = ServerStep {
            name: "ferretdb".into(),
            dir: odd("servers/ferretdb"),
            nodes: 3,
            port: Some(17201),
            settings: kv(&[
                ("ferretdb_log", "-debug = yes"),
                ("ferretdb_pg_url", "postgres://kv:S3cr3t@127.0.0.1/kvperf"),
            ]),
        };
        vec![
            ycsb(YcsbPhase::Load, true, Some((2, 5))),
            ycsb(YcsbPhase::Run, false, None),
            S::Bench(BenchStep {
                engine: "rocksdb".into(),
                db: Some(odd("bench")),
                benchmarks: "waitforcompaction,readrandom".into(),
                threads: 3,
                use_existing_db: true,
                drop_caches: true,
                flags: kv(&[
                    ("value_size", "4k"),
                    ("reads", "-1"),
                    ("num", "5000"),
                    ("bloom_bits", "-10"),
                    ("compression_type", "zstd"),
                ]),
                json: odd("bench.json"),
            }),
            device(
                DeviceKind::Corners,
                &[("size", "64MiB"), ("runtime", "3"), ("ramp", "1")],
            ),
            device(
                DeviceKind::Precondition,
                &[
                    ("size", "1GiB"),
                    ("passes", "2"),
                    ("steady", "iops within 5%"),
                    ("round-seconds", "2"),
                    ("max-rounds", "3"),
                ],
            ),
            S::Settle(SettleStep {
                engine: "rocksdb".into(),
                compact: true,
                db: Some(odd("settle")),
                properties: kv(&[("rocksdb.compression", "lz4"), ("rocksdb.x", "a=b c")]),
            }),
            server.stop(),
            S::ServerStart(server),
        ]
    }

    /// What the plan renders, the child's parser reads back: through the
    /// environment for the arguments holding a credential, as a child
    /// gets them.
    #[test]
    fn every_step_command_survives_its_command_line() {
        let cases = cases();
        let mut seen = [false; VARIANTS];
        for case in &cases {
            seen[variant(case)] = true;
            let args = case.args();
            let (public, private) = crate::plan::child::split_private(&args);
            let all = crate::private_args::with_private_args(
                public.iter().map(OsString::from),
                Some(serde_json::to_string(&private).unwrap().into()),
            )
            .unwrap();
            let all: Vec<String> = all.into_iter().map(|a| a.into_string().unwrap()).collect();
            let back = step_command(&all).unwrap_or_else(|e| panic!("{args:?}: {e:#}"));
            assert_eq!(&back, case, "{args:?}");
        }
        assert!(
            seen.iter().all(|s| *s),
            "a variant without a case: {seen:?}"
        );
        let secrets = cases.iter().map(S::args).filter(|a| {
            let (public, _) = crate::plan::child::split_private(a);
            public.iter().any(|w| w.contains("S3cr3t"))
        });
        assert_eq!(secrets.count(), 0, "a credential on a command line");
    }

    #[test]
    fn a_command_no_plan_runs_is_refused() {
        let err = step_command(&["engines".to_string()]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "`kvperf engines` is not a plan step's command"
        );
        let text = ["run", "--engine", "null", "--threads", "1"].map(String::from);
        assert!(
            step_command(&text).is_err(),
            "a step's output is JSON in a file"
        );
    }
}
