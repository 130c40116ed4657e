//! Command lines as YCSB, db_bench (through benchmark.sh) and gflags users
//! type them, rewritten into kvperf's before clap reads them, or refused
//! with kvperf's spelling in one line:
//!
//! - YCSB's `Client`: `-load`/`-t` for the phase, `-db <binding class>`,
//!   the binding name after the command (`load rocksdb -P ...`),
//!   `-threads N`/`-threads=N`, `-target N`, `-p rocksdb.dir=DIR`;
//! - db_bench's gflags: `-flag=value` for `--flag=value`, `--undefok`,
//!   and an unknown flag named with what sets it in kvperf;
//! - one output spelling across modes: `--json FILE` wherever a command
//!   takes `--format` and `--output`, and `bench --format json --output FILE`.

use std::ffi::OsString;

use crate::engine::ycsb_bindings::engine_for_binding;
use crate::error::{did_you_mean, InputError};

/// The command line for clap, and the flags dropped under `--undefok`.
#[derive(Debug, Default, PartialEq)]
pub struct Rewritten {
    pub args: Vec<OsString>,
    /// `--flag[=value]` tokens `kvperf bench` ignored as `--undefok` asks.
    pub ignored: Vec<String>,
}

/// Rewrites `args` (program name first) for `cli`, kvperf's clap command.
pub fn rewrite(
    args: impl IntoIterator<Item = OsString>,
    cli: &clap::Command,
) -> Result<Rewritten, InputError> {
    let mut args: Vec<OsString> = args.into_iter().collect();
    // YCSB's Client takes the phase as a flag: `-load` or `-t`.
    if let Some(phase) = args.get(1).and_then(|a| phase_flag(a.to_str()?)) {
        args[1] = phase.into();
    }
    let Some(command) = args.get(1).and_then(|a| a.to_str()).map(str::to_string) else {
        return Ok(Rewritten {
            args,
            ignored: Vec::new(),
        });
    };
    let sub = cli.find_subcommand(&command);
    let (program, rest) = (args[0].clone(), args.split_off(2));
    let mut out = Rewritten {
        args: vec![program, command.clone().into()],
        ignored: Vec::new(),
    };
    let rest = match (command.as_str(), sub) {
        ("load" | "run", _) => ycsb_flags(&command, rest)?,
        ("bench", Some(sub)) => bench_flags(rest, sub, &mut out.ignored)?,
        _ => rest,
    };
    let rest = match sub {
        Some(sub) if takes_format_and_output(sub, &rest) => json_as_output(rest),
        _ => rest,
    };
    out.args.extend(rest);
    Ok(out)
}

/// kvperf's command for YCSB's phase flag.
fn phase_flag(arg: &str) -> Option<&'static str> {
    match arg {
        "-load" => Some("load"),
        "-t" => Some("run"),
        _ => None,
    }
}

fn unknown_binding(binding: &str, given_as: &str) -> InputError {
    InputError::Invalid(format!(
        "{given_as} '{binding}': kvperf has no engine for this YCSB binding; give --engine NAME (`kvperf engines` lists them)"
    ))
}

/// YCSB's single-dash flags of `load` and `run`.
fn ycsb_flags(command: &str, rest: Vec<OsString>) -> Result<Vec<OsString>, InputError> {
    let mut out = Vec::with_capacity(rest.len());
    let mut dir_property: Option<String> = None;
    let mut iter = rest.into_iter().enumerate().peekable();
    while let Some((i, arg)) = iter.next() {
        let Some(text) = arg.to_str() else {
            out.push(arg);
            continue;
        };
        // `bin/ycsb load rocksdb -P ...`: the binding right after the command.
        if i == 0 && !text.starts_with('-') {
            let engine = engine_for_binding(text)
                .ok_or_else(|| unknown_binding(text, "the YCSB binding"))?;
            out.extend(["--engine".into(), engine.into()]);
            continue;
        }
        if let Some(phase) = phase_flag(text) {
            if phase != command {
                return Err(InputError::Invalid(format!(
                    "{text} is YCSB's {phase} phase, but this is kvperf {command}: run `kvperf {phase} ...`"
                )));
            }
            continue;
        }
        if let Some(value) = text.strip_prefix("-db").and_then(|v| v.strip_prefix('=')) {
            let engine = engine_for_binding(value).ok_or_else(|| unknown_binding(value, "-db"))?;
            out.extend(["--engine".into(), engine.into()]);
            continue;
        }
        if text == "-db" {
            let class = iter.next().and_then(|(_, v)| v.into_string().ok());
            let Some(class) = class else {
                return Err(InputError::Invalid(
                    "-db needs a YCSB binding class (kvperf: --engine NAME)".into(),
                ));
            };
            let engine =
                engine_for_binding(&class).ok_or_else(|| unknown_binding(&class, "-db"))?;
            out.extend(["--engine".into(), engine.into()]);
            continue;
        }
        if let Some(flag) = ["-threads", "-target"]
            .into_iter()
            .find(|f| text == *f || text.starts_with(&format!("{f}=")))
        {
            out.push(format!("-{flag}{}", &text[flag.len()..]).into());
            continue;
        }
        if text == "-p" {
            if let Some((_, next)) = iter.peek() {
                if let Some(dir) = next.to_str().and_then(|n| n.strip_prefix("rocksdb.dir=")) {
                    // YCSB's RocksDB binding takes its directory as a property.
                    dir_property = Some(dir.to_string());
                    iter.next();
                    continue;
                }
            }
        }
        out.push(arg);
    }
    if let Some(dir) = dir_property {
        if out
            .iter()
            .any(|a| a == "--db" || a.to_str().is_some_and(|a| a.starts_with("--db=")))
        {
            return Err(InputError::Invalid(
                "-p rocksdb.dir and --db both name the data directory: keep --db".into(),
            ));
        }
        out.extend(["--db".into(), dir.into()]);
    }
    Ok(out)
}

/// db_bench's flags: `-flag` as `--flag`, `--undefok`, and an unknown
/// flag refused one at a time with what sets it in kvperf.
fn bench_flags(
    rest: Vec<OsString>,
    bench: &clap::Command,
    ignored: &mut Vec<String>,
) -> Result<Vec<OsString>, InputError> {
    let rest: Vec<OsString> = rest
        .into_iter()
        .map(|a| match a.to_str() {
            Some(flag) if is_single_dash_long(flag) => format!("-{flag}").into(),
            _ => a,
        })
        .collect();
    let known: Vec<&str> = bench
        .get_arguments()
        .filter_map(|a| a.get_long())
        .chain(["help", "version"])
        .collect();
    let undefok: Vec<String> = rest
        .iter()
        .enumerate()
        .filter_map(|(i, a)| match a.to_str()?.strip_prefix("--undefok") {
            Some(v) if v.starts_with('=') => Some(v[1..].to_string()),
            Some("") => rest.get(i + 1)?.to_str().map(str::to_string),
            _ => None,
        })
        .flat_map(|list| {
            list.split(',')
                .map(|s| s.trim().to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    let format = flag_value(&rest, "--format").map(|f| f.to_string_lossy().into_owned());
    let output = flag_value(&rest, "--output");
    let mut out = Vec::with_capacity(rest.len());
    let mut iter = rest.iter().cloned();
    while let Some(arg) = iter.next() {
        let Some(text) = arg.to_str() else {
            out.push(arg);
            continue;
        };
        if text == "--" {
            out.push(arg);
            out.extend(iter.by_ref());
            break;
        }
        let Some(name) = text
            .strip_prefix("--")
            .map(|n| n.split('=').next().unwrap_or(n))
        else {
            out.push(arg);
            continue;
        };
        match name {
            // `run`'s spelling: the JSON goes to --json FILE.
            "format" | "output" => {
                if !text.contains('=') {
                    iter.next();
                }
                continue;
            }
            _ if known.contains(&name) => out.push(arg),
            _ if undefok.iter().any(|u| u == name) => ignored.push(text.to_string()),
            _ => {
                let hint = did_you_mean(name, known.iter().copied())
                    .map(|k| format!(" (did you mean --{k}?)"))
                    .unwrap_or_default();
                // RocksDB's options that put its files outside --db are
                // refused in rocksdb.options too: not suggested there.
                let option = if name == "db_log_dir" {
                    String::new()
                } else {
                    format!("; if it is a RocksDB option, -p rocksdb.options={name}=VALUE sets it")
                };
                return Err(InputError::Invalid(format!(
                    "--{name} is not a flag of kvperf bench{hint}{option}; --undefok={name} ignores it"
                )));
            }
        }
    }
    match (format.as_deref(), output) {
        (None | Some("text"), None) => {}
        (Some("json"), Some(file)) => out.extend(["--json".into(), file]),
        (Some("json"), None) => {
            return Err(InputError::Invalid(
                "kvperf bench prints db_bench's text on stdout; write the JSON with --json FILE (--json - for stdout)".into(),
            ))
        }
        (None | Some("text"), Some(file)) => {
            return Err(InputError::Invalid(format!(
                "--output {}: kvperf bench prints db_bench's text on stdout; --json FILE writes the results as JSON",
                file.to_string_lossy()
            )))
        }
        (Some(other), _) => {
            return Err(InputError::Invalid(format!(
                "--format {other}: kvperf bench prints db_bench's text; --json FILE writes JSON"
            )))
        }
    }
    Ok(out)
}

/// The value of `--flag VALUE` or `--flag=VALUE` (the last given).
fn flag_value(args: &[OsString], flag: &str) -> Option<OsString> {
    let mut found = None;
    for (i, a) in args.iter().enumerate() {
        let Some(text) = a.to_str() else { continue };
        if text == flag {
            found = args.get(i + 1).cloned();
        } else if let Some(v) = text.strip_prefix(flag).and_then(|v| v.strip_prefix('=')) {
            found = Some(v.into());
        }
    }
    found
}

fn is_single_dash_long(arg: &str) -> bool {
    let bytes = arg.as_bytes();
    bytes.len() > 2 && bytes[0] == b'-' && bytes[1].is_ascii_alphabetic()
}

/// Whether the command `sub` (or its subcommand that `rest` names, as
/// `device corners`) writes with `--format` and `--output`, not `--json`.
fn takes_format_and_output(sub: &clap::Command, rest: &[OsString]) -> bool {
    let leaf = rest
        .first()
        .and_then(|a| a.to_str())
        .and_then(|name| sub.find_subcommand(name))
        .unwrap_or(sub);
    let has = |long: &str| leaf.get_arguments().any(|a| a.get_long() == Some(long));
    has("format") && has("output") && !has("json")
}

/// `--json FILE` as `--format json --output FILE`, the spelling of `run`.
fn json_as_output(rest: Vec<OsString>) -> Vec<OsString> {
    let mut out = Vec::with_capacity(rest.len() + 2);
    let mut iter = rest.into_iter();
    while let Some(arg) = iter.next() {
        match arg.to_str() {
            Some("--") => {
                out.push(arg);
                out.extend(iter.by_ref());
                break;
            }
            Some("--json") => {
                out.extend(["--format".into(), "json".into(), "--output".into()]);
            }
            Some(text) if text.starts_with("--json=") => {
                out.extend(["--format".into(), "json".into()]);
                out.push(format!("--output={}", &text["--json=".len()..]).into());
            }
            _ => out.push(arg),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn rewritten(args: &[&str]) -> Result<Vec<String>, String> {
        let args = std::iter::once("kvperf")
            .chain(args.iter().copied())
            .map(OsString::from);
        rewrite(args, &crate::cli::Cli::command())
            .map(|r| {
                r.args[1..]
                    .iter()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect()
            })
            .map_err(|e| e.to_string())
    }

    #[test]
    fn ycsb_client_phase_flags_pick_the_command() {
        assert_eq!(
            rewritten(&["-load", "-P", "w"]).unwrap(),
            ["load", "-P", "w"]
        );
        assert_eq!(rewritten(&["-t", "-s"]).unwrap(), ["run", "-s"]);
        assert_eq!(rewritten(&["load", "-load", "-s"]).unwrap(), ["load", "-s"]);
        let err = rewritten(&["run", "-load"]).unwrap_err();
        assert!(err.contains("kvperf load"), "{err}");
    }

    #[test]
    fn ycsb_bindings_map_onto_engines() {
        assert_eq!(
            rewritten(&["load", "rocksdb", "-P", "w"]).unwrap(),
            ["load", "--engine", "rocksdb", "-P", "w"]
        );
        assert_eq!(
            rewritten(&["run", "-db", "site.ycsb.db.rocksdb.RocksDBClient"]).unwrap(),
            ["run", "--engine", "rocksdb"]
        );
        assert_eq!(
            rewritten(&["run", "-db=com.yahoo.ycsb.db.RedisClient"]).unwrap(),
            ["run", "--engine", "redis"]
        );
        assert_eq!(engine_for_binding("basic"), Some("null"));
        assert_eq!(engine_for_binding("cassandra-cql"), Some("cassandra"));
        assert_eq!(engine_for_binding("lmdb"), Some("lmdb"));
        let err = rewritten(&["run", "-db", "site.ycsb.db.HBaseClient"]).unwrap_err();
        assert!(err.contains("--engine NAME"), "{err}");
        let err = rewritten(&["load", "hbase12"]).unwrap_err();
        assert!(
            err.contains("'hbase12'") && err.contains("--engine"),
            "{err}"
        );
    }

    #[test]
    fn ycsb_threads_target_and_rocksdb_dir() {
        assert_eq!(
            rewritten(&["run", "-threads=2", "-target", "1000", "-target=5"]).unwrap(),
            ["run", "--threads=2", "--target", "1000", "--target=5"]
        );
        assert_eq!(
            rewritten(&["run", "-p", "rocksdb.dir=/x", "-p", "a=1"]).unwrap(),
            ["run", "-p", "a=1", "--db", "/x"]
        );
        let err = rewritten(&["run", "--db", "/y", "-p", "rocksdb.dir=/x"]).unwrap_err();
        assert!(err.contains("keep --db"), "{err}");
    }

    #[test]
    fn bench_takes_gflags_and_undefok() {
        assert_eq!(
            rewritten(&["bench", "-num=5", "--undefok=foo,bar", "--foo=1", "--bar"]).unwrap(),
            ["bench", "--num=5", "--undefok=foo,bar"]
        );
        let args = std::iter::once("kvperf")
            .chain(["bench", "--undefok", "foo", "--foo=1"])
            .map(OsString::from);
        let r = rewrite(args, &crate::cli::Cli::command()).unwrap();
        assert_eq!(r.ignored, ["--foo=1"]);
        let err = rewritten(&["bench", "--max_bytes_for_level_base=1"]).unwrap_err();
        assert!(
            err.contains("-p rocksdb.options=max_bytes_for_level_base=VALUE")
                && err.contains("--undefok=max_bytes_for_level_base"),
            "{err}"
        );
        let err = rewritten(&["bench", "--benchmark=fillseq"]).unwrap_err();
        assert!(err.contains("(did you mean --benchmarks?)"), "{err}");
    }

    #[test]
    fn one_output_spelling_across_modes() {
        assert_eq!(
            rewritten(&["run", "--json", "r.json"]).unwrap(),
            ["run", "--format", "json", "--output", "r.json"]
        );
        assert_eq!(
            rewritten(&["device", "corners", ".", "--json=c.json"]).unwrap(),
            [
                "device",
                "corners",
                ".",
                "--format",
                "json",
                "--output=c.json"
            ]
        );
        assert_eq!(
            rewritten(&["bench", "--format", "json", "--output", "b.json"]).unwrap(),
            ["bench", "--json", "b.json"]
        );
        assert!(rewritten(&["bench", "--output", "b.json"])
            .unwrap_err()
            .contains("--json FILE"));
        assert!(rewritten(&["bench", "--format=json"])
            .unwrap_err()
            .contains("--json FILE"));
    }
}
