//! Runs a plan's steps unattended: each measured step is a child kvperf
//! process (`kvperf load|run|bench`, as a user would type it), so a step
//! starts from a fresh process like a YCSB or db_bench invocation, and its
//! command line is recorded for reproduction. Each finished step becomes one
//! durable line in the results file; a rerun skips the steps already there.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context;

use super::child::{child_args, child_command, forward_interrupt, redacted_args};
use super::convergence::Convergence;
use super::expand::{self, Step, StepKind};
use super::progress;
use super::step_command::{ServerStep, StepCommand};
use super::watch::{PlanWatch, WatchCleanup};
use super::{Driver, InProgress, LoadedPlan};
use crate::clock::unix_ms;
use crate::engine::{self, Capability, OpenMode};
use crate::error::{InputError, EXIT_INPUT};
use crate::measure::live::LIVE_DIR_ENV;
use crate::results::step::{ErrorKind, StepError, StepOutput};
use crate::results::{self, Appender, PlanId, Record, StepId};
use crate::runner;

pub struct RunOptions {
    pub results: PathBuf,
    pub scale: f64,
    pub db_overrides: Vec<(String, PathBuf)>,
    /// Stop the study at a configuration whose servers cannot start,
    /// instead of recording its steps as failed and going on.
    pub fail_fast: bool,
    /// Serve the study's progress and live figures here (`--metrics-addr`).
    pub metrics_addr: Option<String>,
    /// How each step's command line is checked before the first step runs.
    pub check_step: StepCheck,
}

/// Checks a step's command (`load|run|bench|device ...`), rendered as its
/// child's command line, as the step's own command checks it before it
/// opens an engine or measures. The command layer hands its parser down
/// (`commands::check_step`): the plan knows nothing of the command line
/// above it. It returns the files the step writes beside its output
/// (`trace.output`, interval logs, `rocksdb.trace`), each with what names it.
pub type StepCheck = fn(&StepCommand) -> anyhow::Result<StepFiles>;

/// Files a step writes besides its result, each with the property that names it.
pub type StepFiles = Vec<(&'static str, PathBuf)>;

/// Where the step processes mirror their live figures, when watched.
static LIVE_DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// A plan ready to run: its steps at the chosen scale and its identity.
pub struct Prepared {
    pub loaded: LoadedPlan,
    pub steps: Vec<Step>,
    pub id: PlanId,
}

pub fn prepare(loaded: LoadedPlan, opts: &RunOptions) -> anyhow::Result<Prepared> {
    if !(opts.scale > 0.0 && opts.scale.is_finite()) {
        return Err(InputError::Invalid(format!(
            "--scale {} must be a number greater than 0 (e.g. 0.001)",
            opts.scale
        ))
        .into());
    }
    let mut loaded = loaded;
    let notes = expand::select_configs(&mut loaded.plan, &opts.db_overrides)
        .map_err(InputError::Invalid)?;
    let steps = expand::steps(&loaded, opts.scale, &opts.db_overrides)?;
    check_db_dirs(&steps)?;
    // Said once the directories are known to be usable: bad input stays one line.
    for note in notes {
        progress::note(&note);
    }
    let id = PlanId {
        name: loaded.plan.name.clone(),
        fingerprint: expand::fingerprint(&loaded.plan, opts.scale, &steps),
        scale: opts.scale,
        file: loaded.path.display().to_string(),
        ratios: loaded
            .plan
            .report
            .as_ref()
            .is_some_and(|r| r.improvements == super::Improvements::Ratio),
        brief: loaded
            .plan
            .report
            .as_ref()
            .and_then(|r| r.brief.clone())
            .unwrap_or_default(),
        description: loaded.plan.description.clone(),
        notes: loaded.plan.notes.clone(),
    };
    Ok(Prepared { loaded, steps, id })
}

/// Every config's data directory, held for the whole plan (see
/// [`engine::store_lock::hold_for_plan`]): another plan running on one of
/// them is refused before this one's first step.
fn hold_stores(p: &Prepared) -> Result<Vec<engine::store_lock::PlanHold>, InputError> {
    let mut seen: Vec<&Path> = Vec::new();
    let mut held = Vec::new();
    for step in &p.steps {
        let Some(dir) = step.db.as_deref() else {
            continue;
        };
        if seen.contains(&dir) || !engine::find(&step.engine).is_ok_and(|e| e.uses_data_dir()) {
            continue;
        }
        seen.push(dir);
        let hold = engine::store_lock::hold_for_plan(dir)
            .map_err(|e| InputError::Invalid(format!("config '{}': {e}", step.config)))?;
        match hold {
            engine::store_lock::Held::Held(hold) => held.push(hold),
            engine::store_lock::Held::Unavailable(why) => {
                progress::note(&format!("config '{}': {why}", step.config));
            }
        }
    }
    Ok(held)
}

/// A config's data directory (its own `db` or a `--db` given for it) that
/// a directory engine cannot use (not creatable, or holding files kvperf
/// did not create), refused before anything runs.
fn check_db_dirs(steps: &[Step]) -> Result<(), InputError> {
    let mut checked: Vec<(&str, &Path)> = Vec::new();
    for step in steps {
        let Some(dir) = step.db.as_deref() else {
            continue;
        };
        if checked.contains(&(step.config.as_str(), dir))
            || !engine::find(&step.engine).is_ok_and(|e| e.uses_data_dir())
        {
            continue;
        }
        engine::store::check_usable(dir)
            .map_err(|e| InputError::Invalid(format!("config '{}': {e}", step.config)))?;
        checked.push((step.config.as_str(), dir));
    }
    check_db_dirs_apart(steps, &checked)
}

/// Two configs' data directories where one config's store would stand in
/// the other's: one directory for two engines, or one directory inside
/// another (the outer config's load found the inner's store as a user's
/// file and was refused, after the inner config's steps had run), or one
/// directory for two configs of one engine (the second's load emptied the
/// first's store between its steps, which then measured the second's).
fn check_db_dirs_apart(steps: &[Step], checked: &[(&str, &Path)]) -> Result<(), InputError> {
    let engine_of = |config: &str| {
        steps
            .iter()
            .find(|s| s.config == config)
            .map_or("", |s| s.engine.as_str())
    };
    let resolved: Vec<(&str, &Path, PathBuf)> = checked
        .iter()
        .map(|&(config, dir)| (config, dir, resolved_dir(dir)))
        .collect();
    for (i, (a, a_dir, a_real)) in resolved.iter().enumerate() {
        for (b, b_dir, b_real) in &resolved[i + 1..] {
            if a == b {
                continue;
            }
            let clash = if a_real == b_real && engine_of(a) != engine_of(b) {
                Some(format!(
                    "configs '{a}' ({}) and '{b}' ({}) both keep their stores in '{}'",
                    engine_of(a),
                    engine_of(b),
                    a_dir.display()
                ))
            } else if a_real == b_real {
                return Err(InputError::Invalid(format!(
                    "configs '{a}' and '{b}' both keep their {} stores in '{}': each one's load would empty the store the other's steps measure; give each config a directory of its own (or make them one config)",
                    engine_of(a),
                    a_dir.display()
                )));
            } else if a_real != b_real && b_real.starts_with(a_real) {
                Some(format!(
                    "config '{b}' keeps its store in '{}', inside config '{a}''s '{}'",
                    b_dir.display(),
                    a_dir.display()
                ))
            } else if a_real != b_real && a_real.starts_with(b_real) {
                Some(format!(
                    "config '{a}' keeps its store in '{}', inside config '{b}''s '{}'",
                    a_dir.display(),
                    b_dir.display()
                ))
            } else {
                None
            };
            if let Some(clash) = clash {
                return Err(InputError::Invalid(format!(
                    "{clash}: one would find the other's files as a user's; give each config a directory of its own, neither inside another"
                )));
            }
        }
    }
    Ok(())
}

/// `dir` made absolute through its longest existing ancestor's real path
/// (links and `..` resolved there), the rest as given.
fn resolved_dir(dir: &Path) -> PathBuf {
    let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    for ancestor in absolute.ancestors() {
        if let Ok(real) = std::fs::canonicalize(ancestor) {
            let rest = absolute.strip_prefix(ancestor).unwrap_or(Path::new(""));
            return real.join(rest);
        }
    }
    absolute
}

/// Every file a plan run writes, each at a path of its own: the results,
/// the step marker beside them, a step's output on its way, the report
/// directory and its files. One path given to two of them is refused
/// before the first step (`--results r.jsonl --report r.jsonl` ran the
/// whole plan, then could not write its report).
pub fn check_outputs(results: &Path, report_dir: &Path) -> Result<(), InputError> {
    // The files a plan writes beside its results are named after them
    // (`.NAME.step-PID.json`, the longest): a name past the bound made the
    // first step fail, exit 3, with its marker "kept" as a result.
    let name = results.file_name().map_or(0, |n| n.len());
    if name > MAX_RESULTS_NAME {
        return Err(InputError::Invalid(format!(
            "results file name '{}...' is {name} bytes long; kvperf names the files it writes beside it after it ('.NAME.step-PID.json'), so it is at most {MAX_RESULTS_NAME}",
            results
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .chars()
                .take(32)
                .collect::<String>()
        )));
    }
    let mut outputs = crate::files::Outputs::new();
    outputs.file("--results", results)?;
    outputs.file("the step marker", &InProgress::path_beside(results))?;
    outputs.file("a step's output", &step_output_path(results))?;
    outputs.dir("--report", report_dir)?;
    for name in ["report.md", "report.csv", "report.html"] {
        outputs.file("a --report file", &report_dir.join(name))?;
    }
    check_step_output(&step_output_path(results))?;
    super::launch::check_shards_dir(results)?;
    Ok(())
}

/// Every step's command line checked as the step itself checks it before
/// it opens its engine (the same parser and checks, in this process), so
/// a value no step could run with is found before the first step runs,
/// not at its step with the results file begun. A client of a step with
/// `clients` is checked with its `--shard`. Steps with the same command
/// line are checked once. A file two steps would write (one `trace.output`
/// for every step) is refused: each step replaced the one before's.
pub fn check_steps(p: &Prepared, results: &Path, check: StepCheck) -> anyhow::Result<()> {
    let plan = &p.loaded.plan;
    let json = step_output_path(results);
    let mut seen: std::collections::HashMap<Vec<String>, StepFiles> = Default::default();
    let mut files = crate::files::Outputs::new();
    for step in &p.steps {
        results_outside_store(step, results)?;
        let command = StepCommand::of_step(plan.driver, plan.settle, plan.drop_caches, step, &json);
        let n = step.clients;
        let shards: Vec<StepCommand> = if n > 1 {
            (0..n).map(|i| command.clone().shard(i, n)).collect()
        } else {
            vec![command]
        };
        for command in shards {
            let args = command.args();
            let written = match seen.get(&args) {
                Some(written) => written,
                None => {
                    let written = check(&command).with_context(|| format!("step {}", step.id))?;
                    seen.entry(args).or_insert(written)
                }
            };
            for (what, path) in written {
                files.file(&format!("{what} of step {}", step.id), path)?;
            }
        }
    }
    Ok(())
}

/// The results file inside a config's store, where its engine makes and
/// replaces files of its own, is refused (a step's output beside it is
/// refused by the step's own check).
fn results_outside_store(step: &Step, results: &Path) -> Result<(), InputError> {
    let Some(db) = step.db.as_deref() else {
        return Ok(());
    };
    if !engine::find(&step.engine).is_ok_and(|e| e.uses_data_dir()) {
        return Ok(());
    }
    let mut outputs = crate::files::Outputs::new();
    outputs.file("--results", results)?;
    outputs
        .outside_store(db)
        .map_err(|e| InputError::Invalid(format!("config '{}': {e}", step.config)))
}

/// Engines the plan names that this binary lacks, and what the plan asks
/// of an engine that it cannot do: one clear error before anything runs.
pub fn check_engines(p: &Prepared) -> Result<(), InputError> {
    let plan = &p.loaded.plan;
    for step in &p.steps {
        let spec = engine::find(&step.engine).map_err(|e| {
            InputError::Invalid(format!(
                "plan '{}' config '{}': {e}",
                p.id.name, step.config
            ))
        })?;
        if plan.settle.compacts() {
            spec.require(Capability::Compact, "the plan's settle = \"compact\"")?;
        }
        let mut talks_to_one = step.servers.is_empty();
        for server in &step.servers {
            let known = crate::server::find(&server.name)
                .and_then(|known| {
                    known.check_nodes(server.nodes)?;
                    for (key, value) in &server.settings {
                        known.setting_var(key)?;
                        crate::server::check_setting(known, key, &value.to_string())?;
                    }
                    Ok(known)
                })
                .map_err(|e| {
                    InputError::Invalid(format!(
                        "plan '{}' config '{}': {e}",
                        p.id.name, step.config
                    ))
                })?;
            talks_to_one |= matches!(spec.store,
                engine::StoreKind::Server { server, .. } if server == known.name);
        }
        if !talks_to_one {
            return Err(InputError::Invalid(format!(
                "plan '{}' config '{}': engine '{}' talks to none of the config's servers",
                p.id.name, step.config, spec.name
            )));
        }
        if plan.driver == Driver::DbBench && matches!(step.kind, StepKind::Load | StepKind::Run) {
            let bench = crate::workload::dbbench::Benchmark::parse(&step.workload)?;
            spec.require(
                Capability::Kv(bench.kv_support()),
                &format!("the plan's db_bench benchmark {}", step.workload),
            )?;
        }
        match (&step.db, spec.uses_data_dir()) {
            (None, true) => {
                return Err(InputError::Invalid(format!(
                    "plan '{}' config '{}': engine '{}' keeps its data in a directory; give the config a db",
                    p.id.name, step.config, spec.name
                )))
            }
            (Some(_), false) => {
                return Err(InputError::Invalid(format!(
                    "plan '{}' config '{}': engine '{}' keeps no data directory; remove the config's db",
                    p.id.name, step.config, spec.name
                )))
            }
            _ => {}
        }
        if step.clients > 1 && !matches!(spec.store, engine::StoreKind::Server { .. }) {
            return Err(InputError::Invalid(format!(
                "plan '{}' config '{}': clients = {} runs that many processes against one store, and engine '{}' is not a server; use a server engine",
                p.id.name, step.config, step.clients, spec.name
            )));
        }
        if matches!(step.kind, StepKind::Precondition | StepKind::Corners)
            && step.data_dir().is_none()
        {
            return Err(InputError::Invalid(format!(
                "plan '{}' config '{}': a {} measures the data directory's device, and the config has no db",
                p.id.name,
                step.config,
                step.kind.name()
            )));
        }
    }
    Ok(())
}

/// The engine libraries the configs ask for (`rocksdb.version`), fetched
/// and checked before any step runs: each distinct one once.
fn check_libraries(p: &Prepared) -> anyhow::Result<()> {
    let mut checked = BTreeSet::new();
    for step in &p.steps {
        let mut props = crate::properties::Properties::new();
        for (key, value) in &step.properties {
            props.set(key, value);
        }
        let key = (
            step.engine.clone(),
            props.get("rocksdb.version").map(str::to_string),
        );
        if checked.insert(key) {
            // Bad input stays bad input (exit 2) under the context.
            engine::check_asked_library(&step.engine, &props)
                .with_context(|| format!("plan '{}' config '{}'", p.id.name, step.config))?;
        }
    }
    Ok(())
}

pub fn run(p: &Prepared, opts: &RunOptions) -> anyhow::Result<()> {
    check_engines(p)?;
    check_server_dirs(p, &opts.results)?;
    check_libraries(p)?;
    check_steps(p, &opts.results, opts.check_step)?;
    let (mut out, loaded) = open_results(p, &opts.results)?;
    // Once every input is found good: holding a store may make its directory.
    let _held = hold_stores(p)?;
    // A step recorded as failed is run again; its record stays, and the
    // report shows the later one.
    let done: BTreeSet<String> = loaded
        .records
        .iter()
        .filter(|r| r.output.error.is_none())
        .map(|r| r.step.id.clone())
        .collect();
    let watch = opts
        .metrics_addr
        .as_deref()
        .map(|addr| PlanWatch::start(addr, &p.id.name, p.steps.len(), done.len()))
        .transpose()?;
    let _cleanup = WatchCleanup(watch.clone());
    if let Some(w) = &watch {
        let _ = LIVE_DIR.set(w.dir().to_path_buf());
    }
    let mut inserted = crate::plan::InsertedKeys::from_records(&loaded.records);
    let mut repeats = Convergence::from_records(&loaded.records);
    // A step that died while it changed its store leaves that store to be
    // made again before the configuration's next step (its record is lost).
    let in_progress = InProgress::beside(&opts.results)?;
    let mut remake = in_progress
        .left_over()?
        .filter(|left| !done.contains(&left.step))
        .map(|left| left.config);
    let plan = &p.loaded.plan;
    if plan.drop_caches && p.steps.iter().any(|s| !done.contains(&s.id)) {
        // Fail now, not after the load.
        crate::host::drop_page_cache("plan drop_caches")?;
    }
    // Ctrl-C or SIGTERM ends the step in progress (it is not kept) and the
    // plan, stopping the servers it started; a rerun resumes.
    runner::stop_on_interrupt();
    let total = p.steps.len();
    let started = Instant::now();
    let mut ran = 0u32;
    let mut ran_time = Duration::ZERO;
    let mut servers = Servers::new(&opts.results);
    // Configurations whose servers could not start: (name, why).
    let mut not_served: Vec<(String, String)> = Vec::new();
    for (index, step) in p.steps.iter().enumerate() {
        if skipped(p, index, &done, &not_served, &repeats) {
            continue;
        }
        // A config's server runs while its steps do.
        if let Err(e) = servers.serve(step) {
            let why = unserved(p, opts, index, &done, &mut out, e)?;
            // Only the step marker says its store is to be made again, and
            // the other configurations' steps would replace it (pass 16).
            if remake.as_deref() == Some(step.config.as_str()) {
                anyhow::bail!(
                    "the servers of config '{}' could not start ({why}): its steps are recorded as failed in '{}'; its store, which an interrupted step changed, is made again before its next step, so the other configurations wait; rerun the same command once its servers can start",
                    step.config,
                    opts.results.display()
                );
            }
            not_served.push((step.config.clone(), why));
            continue;
        }
        // The command that made the store again, which the step's record names.
        let mut remade = None;
        if remake.as_deref() == Some(step.config.as_str()) {
            if step.kind != StepKind::Load {
                remade = remake_store(p, index, &opts.results)?;
                inserted.restart(&step.config);
            }
            remake = None;
        }
        let remaining = p.steps[index..]
            .iter()
            .filter(|s| !done.contains(&s.id))
            .count();
        progress::step_starts((index, total), step, started, (ran, ran_time), remaining);
        let step_started = Instant::now();
        in_progress.begin(&step.config, &step.id)?;
        let step = match plan.driver {
            Driver::Ycsb => inserted.place(step),
            Driver::DbBench => std::borrow::Cow::Borrowed(step),
        };
        if let (std::borrow::Cow::Owned(_), Some((_, at))) = (&step, step.properties.last()) {
            progress::inserts_start(at);
        }
        if let Some(w) = &watch {
            w.step_started(&step);
        }
        let record = run_step(p, &step, &opts.results);
        if let Some(w) = &watch {
            w.step_ended(record.as_ref().is_ok_and(|r| r.output.error.is_none()));
        }
        if runner::interrupted() {
            let finished = done.len() + ran as usize;
            return Err(interrupted_during(&step, &record, finished, &opts.results));
        }
        let mut record = step_record(record, &step, &in_progress, &opts.results)?;
        if let Some(command) = remade {
            record.before.insert(0, command);
        }
        out.append(&record)?;
        in_progress.end()?;
        inserted.add(&record);
        if let Some(unsettled) = repeats.add(&p.steps, &step, &record) {
            progress::unsettled(&unsettled);
        }
        progress::record(&record);
        if let Some(e) = &record.output.error {
            // Kept as a failed record: the report marks it, a rerun retries it.
            anyhow::bail!(
                "step {} failed: {} (what it measured is kept in '{}', marked failed; rerun the same command to retry it)",
                step.id,
                e.message,
                opts.results.display()
            );
        }
        ran += 1;
        ran_time += step_started.elapsed();
    }
    servers.stop()?;
    repeats.report_unsettled();
    finish(p, opts, &not_served, ran, started)
}

/// The plan's last word: the configurations whose servers never started
/// (an error), or the plan complete.
fn finish(
    p: &Prepared,
    opts: &RunOptions,
    not_served: &[(String, String)],
    ran: u32,
    started: Instant,
) -> anyhow::Result<()> {
    let total = p.steps.len();
    if !not_served.is_empty() {
        let names: Vec<String> = not_served
            .iter()
            .map(|(c, why)| format!("'{c}' ({why})"))
            .collect();
        anyhow::bail!(
            "the servers of config {} could not start: their steps are recorded as failed in '{}'; the other configurations ran; rerun the same command to retry them",
            names.join(", "),
            opts.results.display()
        );
    }
    progress::complete(&p.id.name, total, &opts.results, ran, started);
    Ok(())
}

/// Opens (and locks) the results file, refusing one that holds another
/// plan's results; says so when it drops a torn last line.
fn open_results(p: &Prepared, results: &Path) -> anyhow::Result<(Appender, results::Loaded)> {
    if let Some(dir) = results.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            InputError::Invalid(format!(
                "cannot create the directory of --results '{}': {e}",
                results.display()
            ))
        })?;
    }
    // Refuses what is not kvperf's results, untouched; locked from here
    // on: a second plan run on the file is refused.
    let (out, loaded) = Appender::open(results)?;
    if let Some(other) = loaded
        .records
        .iter()
        .find(|r| r.plan.fingerprint != p.id.fingerprint)
    {
        return Err(InputError::Invalid(format!(
            "results file '{}' holds results of another plan ('{}' at scale {}, fingerprint {}; this is '{}' at scale {}, fingerprint {}); use a new --results file",
            results.display(),
            other.plan.name,
            other.plan.scale,
            other.plan.fingerprint,
            p.id.name,
            p.id.scale,
            p.id.fingerprint
        ))
        .into());
    }
    // Each record is one of this plan's steps as the plan says it, and a
    // step is measured once: a record edited, copied in or joined from
    // another run would be skipped as done, or shown as a repeat.
    results::check_one_plan_once_each(results, &loaded.records)?;
    let planned: BTreeMap<&str, StepId> = p
        .steps
        .iter()
        .map(|s| (s.id.as_str(), step_id(s)))
        .collect();
    if let Some(r) = loaded
        .records
        .iter()
        .find(|r| planned.get(r.step.id.as_str()) != Some(&r.step))
    {
        let what = if planned.contains_key(r.step.id.as_str()) {
            format!(
                "a record of step {} whose configuration, kind, workload, threads, repeat or data directory differ from the plan's",
                r.step.id
            )
        } else {
            format!(
                "step {}, which plan '{}' does not have",
                r.step.id, p.id.name
            )
        };
        return Err(InputError::Invalid(format!(
            "results file '{}' holds {what}: the file was edited or joined; use a new --results file",
            results.display()
        ))
        .into());
    }
    if loaded.torn_tail > 0 {
        progress::torn_tail(loaded.torn_tail, results);
    }
    Ok((out, loaded))
}

/// The server of step `index`'s configuration could not start (`e`): the
/// plan's own mistake (or `--fail-fast`) ends the plan; otherwise the
/// configuration's steps are recorded as failed and the reason returned.
fn unserved(
    p: &Prepared,
    opts: &RunOptions,
    index: usize,
    done: &BTreeSet<String>,
    out: &mut Appender,
    e: anyhow::Error,
) -> anyhow::Result<String> {
    let (step, total) = (&p.steps[index], p.steps.len());
    // Bad settings are the plan's mistake, not this configuration's.
    if opts.fail_fast || crate::error::exit_code(&e) == EXIT_INPUT {
        return Err(e);
    }
    // One configuration's server is not the study: its steps are
    // recorded as failed (a rerun retries them), the others go on.
    let why = crate::properties::scrubbed_text(&format!("{e:#}"));
    progress::unserved(index, total, &step.config, &why);
    for s in p.steps[index..]
        .iter()
        .filter(|s| s.config == step.config && !done.contains(&s.id))
    {
        out.append(&not_run(p, s, &why))?;
    }
    Ok(why)
}

/// A step's record, or the plan's error when the step produced none.
fn step_record(
    record: anyhow::Result<Record>,
    step: &Step,
    in_progress: &InProgress,
    results: &Path,
) -> anyhow::Result<Record> {
    match record {
        Ok(record) => Ok(record),
        // Bad input only the step could find: the same command would
        // fail the same way, so it is not what the user is told to do.
        // The step refused before it measured or changed its store.
        Err(e) if crate::error::exit_code(&e) == EXIT_INPUT => {
            in_progress.end()?;
            Err(InputError::Invalid(format!(
                "step {} cannot run: {e:#}; nothing of it was measured (finished steps are kept in '{}'; correct this, then run the plan again to resume)",
                step.id,
                results.display()
            ))
            .into())
        }
        Err(e) => Err(anyhow::anyhow!(
            "step {} failed: {e:#} (finished steps are kept in '{}'; rerun the same command to resume)",
            step.id,
            results.display()
        )),
    }
}

/// Whether step `index` is left out now: done in an earlier call, of a
/// configuration whose server did not start, or a repeat not needed; the
/// first and the last are said in a progress line.
fn skipped(
    p: &Prepared,
    index: usize,
    done: &BTreeSet<String>,
    not_served: &[(String, String)],
    repeats: &Convergence,
) -> bool {
    let (step, total) = (&p.steps[index], p.steps.len());
    if done.contains(&step.id) {
        progress::done_earlier(index, total, step);
        return true;
    }
    if not_served.iter().any(|(config, _)| *config == step.config) {
        return true;
    }
    if let Some(enough) = repeats.enough_before(&p.steps, step) {
        progress::not_needed(index, total, step, &enough);
        return true;
    }
    false
}

/// Makes step `index`'s store again with the load that made it (its
/// configuration's last before it: a label's own, `fillseq` of 16 KB values
/// after one of 4 KB), which is not recorded again: a step that died while
/// it changed the store left it in a state no record describes. Returns
/// the load's command, for the step's record.
fn remake_store(p: &Prepared, index: usize, results: &Path) -> anyhow::Result<Option<Vec<String>>> {
    let step = &p.steps[index];
    let Some(load) = p.steps[..index]
        .iter()
        .rev()
        .find(|s| s.config == step.config && s.kind == StepKind::Load)
    else {
        // The null engine keeps nothing: no store was changed.
        if matches!(
            engine::find(&step.engine)?.store,
            engine::StoreKind::Nothing
        ) {
            return Ok(None);
        }
        return Err(InputError::Invalid(format!(
            "a step of config '{}' was interrupted while it changed the store, and the plan has no load to make the store again; start over with a new --results file",
            step.config
        ))
        .into());
    };
    progress::remaking_store(&step.config, &load.id);
    let record = run_step(p, load, results)?;
    match record.output.error {
        Some(e) => Err(anyhow::anyhow!(
            "making the store of config '{}' again: {}",
            step.config,
            e.message
        )),
        None => Ok(Some(record.command)),
    }
}

/// The plan's end at an interrupt during `step`, `finished` steps in
/// `results`; the plan's own wait for a server (emptying its store) is said.
fn interrupted_during(
    step: &Step,
    record: &anyhow::Result<Record>,
    finished: usize,
    results: &Path,
) -> anyhow::Error {
    let waiting = match record {
        Err(e) => e
            .downcast_ref::<crate::step::Unanswered>()
            .map_or(String::new(), |wait| format!(", {wait}")),
        Ok(_) => String::new(),
    };
    anyhow::anyhow!(
        "interrupted during step {}{waiting}: it is not kept; the {finished} finished steps are in '{}'; rerun the same command to resume",
        step.id,
        results.display()
    )
}

fn run_step(p: &Prepared, step: &Step, results: &Path) -> anyhow::Result<Record> {
    let started_at = unix_ms();
    let plan = &p.loaded.plan;
    let spec = engine::find(&step.engine)?;
    let mut before = Vec::new();
    let (command, output) = match step.kind {
        StepKind::Precondition | StepKind::Corners => {
            let dir = step
                .data_dir()
                .context("a device step needs a data directory")?;
            if step.db.is_some() {
                // The data directory is kvperf's before anything is written to it.
                engine::store::prepare(spec, dir, OpenMode::Any)?;
            } else {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create '{}'", dir.display()))?;
            }
            let json_path = step_output_path(results);
            let args = child_args(plan.driver, plan.settle, plan.drop_caches, step, &json_path);
            let output = run_child(&args, Some(&json_path), OnInterrupt::Stop)?
                .context("the step wrote no result")?;
            (args, output)
        }
        StepKind::Load | StepKind::Run => {
            if step.kind == StepKind::Run && plan.driver == Driver::Ycsb {
                if let Some(db) = &step.db {
                    if !spec.recognizes(db) {
                        return Err(InputError::Invalid(format!(
                            "the store in '{}' is gone (a tmpfs after a reboot?); its load is already recorded, so start over with a new --results file",
                            db.display()
                        ))
                        .into());
                    }
                }
                if plan.settle.waits() {
                    let settle = StepCommand::settle(step, plan.settle.compacts()).args();
                    run_child(&settle, None, OnInterrupt::Stop)?;
                    before.push(settle);
                }
                if plan.drop_caches {
                    crate::host::drop_page_cache("plan drop_caches")?;
                    before.push(vec!["drop_caches".to_string()]);
                }
            }
            if step.clients > 1 {
                if step.kind == StepKind::Load {
                    empty_store(step)?;
                    before.push(vec!["fresh store".to_string()]);
                }
                run_clients(p, step, results)?
            } else {
                let json_path = step_output_path(results);
                let args = child_args(plan.driver, plan.settle, plan.drop_caches, step, &json_path);
                let output = run_child(&args, Some(&json_path), OnInterrupt::Stop)?
                    .context("the step wrote no result")?;
                (args, output)
            }
        }
    };
    Ok(record_of(p, step, started_at, before, command, output))
}

/// What `step`'s record says it is.
fn step_id(step: &Step) -> StepId {
    StepId {
        id: step.id.clone(),
        config: step.config.clone(),
        kind: step.kind.name().to_string(),
        workload: step.workload.clone(),
        label: step.label.clone(),
        // Every client's threads: what ran against the engine at once.
        threads: step.threads * u64::from(step.clients),
        repeat: step.repeat,
        db: step
            .data_dir()
            .map_or_else(String::new, |d| d.display().to_string()),
    }
}

/// `step`'s record: what ran before it and as it (redacted), its output.
fn record_of(
    p: &Prepared,
    step: &Step,
    started_at: u64,
    before: Vec<Vec<String>>,
    command: Vec<String>,
    output: StepOutput,
) -> Record {
    Record {
        kvperf_results: results::FORMAT,
        plan: p.id.clone(),
        step: step_id(step),
        started_at_unix_ms: started_at,
        finished_at_unix_ms: unix_ms(),
        before: before.iter().map(|c| redacted_args(c)).collect(),
        command: redacted_args(&command),
        output,
    }
}

/// The record of a step that could not run at all (its configuration's
/// server did not start): nothing measured, `why` as its error.
fn not_run(p: &Prepared, step: &Step, why: &str) -> Record {
    let mut output = StepOutput::begin(step.kind.name());
    output.finished_at_unix_ms = unix_ms();
    output.error = Some(StepError {
        kind: ErrorKind::Run,
        message: why.to_string(),
    });
    record_of(p, step, unix_ms(), Vec::new(), Vec::new(), output)
}

/// The step's `clients` processes, all at once, each running shard i of N
/// of the step (`--shard i/N`), merged into the step's one output; the
/// command recorded is client i's, with `--shard I/N`.
fn run_clients(
    p: &Prepared,
    step: &Step,
    results: &Path,
) -> anyhow::Result<(Vec<String>, StepOutput)> {
    let plan = &p.loaded.plan;
    match step.launcher {
        super::Launcher::Srun => return super::launch::srun(plan, step, results),
        super::Launcher::Kubernetes => return super::launch::kubernetes(plan, step, results),
        super::Launcher::Local => {}
    }
    let n = step.clients;
    let clients: Vec<(Vec<String>, PathBuf)> = (0..n)
        .map(|i| {
            let json = step_output_path(results).with_extension(format!("client-{i}.json"));
            let command =
                StepCommand::of_step(plan.driver, plan.settle, plan.drop_caches, step, &json);
            (command.shard(i, n).args(), json)
        })
        .collect();
    let outputs: Vec<anyhow::Result<Option<StepOutput>>> = std::thread::scope(|scope| {
        let running: Vec<_> = clients
            .iter()
            .map(|(args, json)| scope.spawn(move || run_child(args, Some(json), OnInterrupt::Stop)))
            .collect();
        running
            .into_iter()
            .map(|t| {
                t.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a client thread panicked")))
            })
            .collect()
    });
    let mut parts = Vec::with_capacity(outputs.len());
    for (i, output) in outputs.into_iter().enumerate() {
        let output = output
            .with_context(|| format!("client {i} of {n}"))?
            .with_context(|| format!("client {i} of {n} wrote no result"))?;
        parts.push((format!("client {i}"), output));
    }
    let mut command = clients[0].0.clone();
    if let Some(shard) = command.last_mut() {
        *shard = format!("I/{n}");
    }
    Ok((command, crate::results::merge::merge(parts)?))
}

/// Empties the step's store once, for a load by several clients: what
/// `kvperf load --fresh` does before a load by one. In the plan's own
/// process, so bounded by the step's `stalltimeout` and ended at SIGINT
/// or SIGTERM (pass 16: a server stopped at its `DROP TABLE` held the
/// plan for good, deaf to both).
fn empty_store(step: &Step) -> anyhow::Result<()> {
    let spec = engine::find(&step.engine)?;
    let mut properties = crate::properties::Properties::new();
    for (k, v) in &step.properties {
        properties.set(k, v);
    }
    let limit = crate::step::client::stall_timeout(&properties)?;
    let dir = step.db.clone();
    let empty = move || {
        let options = engine::OpenOptions {
            dir: dir.as_deref(),
            properties: &properties,
            mode: OpenMode::Fresh,
            // Emptying a store makes no client, so no runtime is lent.
            runtime: None,
            clients: None,
        };
        let engine = engine::open(spec, &options)?;
        let closed = engine.close();
        drop(engine);
        closed
    };
    crate::step::bounded(empty, limit, |ended| {
        match ended {
        crate::step::Ended::Interrupted => {
            "waiting for the server as the plan emptied the store for the step's clients".to_string()
        }
        crate::step::Ended::Unanswered(limit) => format!(
            "the server did not answer within {} s as the plan emptied the store for the step's clients: it stopped answering (stalltimeout={}); nothing of the step ran",
            limit.as_secs_f64(),
            limit.as_secs_f64()
        ),
    }
    })?
}

/// Runs `kvperf ARGS`; it dies with this process (so `kill -9` of a plan
/// leaves no orphan writing to the store). The step reports through its
/// typed output in `json` (warnings and its error included); its stderr is
/// only shown when it ended without saying why (a crash).
/// What a child does when the plan is interrupted.
#[derive(Clone, Copy, PartialEq, Eq)]
enum OnInterrupt {
    /// A step: it gets the interrupt and ends (what it measured is kept
    /// only if it finished).
    Stop,
    /// Stopping a server: it must finish, or the server outlives the plan.
    Finish,
}

fn run_child(
    args: &[String],
    json: Option<&Path>,
    on_interrupt: OnInterrupt,
) -> anyhow::Result<Option<StepOutput>> {
    use std::io::Read;
    let exe = std::env::current_exe().context("cannot find the kvperf executable")?;
    let mut cmd = child_command(&exe, args);
    // A plan's steps are whole steps (a step with clients says which
    // shard each is): never shards picked up from a job array's variables.
    cmd.env_remove("KVPERF_SHARD")
        .env_remove("JOB_COMPLETION_INDEX")
        .env_remove("SLURM_ARRAY_TASK_ID")
        .env_remove(LIVE_DIR_ENV)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let parent = std::process::id();
    // SAFETY: prctl, getppid and _exit are async-signal-safe; nothing else
    // runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // A plan killed between fork and prctl would leave the step
            // running on its own, writing to the store (seen in
            // scripts/kill-loop.sh): the child checks it still has its parent.
            if libc::getppid() as u32 != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    if let Some(path) = json {
        clear_step_output(path)?;
    }
    if let Some(dir) = LIVE_DIR.get() {
        cmd.env(LIVE_DIR_ENV, dir);
    }
    let mut child = cmd.spawn().context("cannot start kvperf for the step")?;
    let mut stderr = String::new();
    let pid = child.id();
    let mut wait = || {
        if let Some(mut pipe) = child.stderr.take() {
            let _ = pipe.read_to_string(&mut stderr);
        }
        child.wait()
    };
    let status = match on_interrupt {
        OnInterrupt::Stop => forward_interrupt(pid, wait),
        OnInterrupt::Finish => wait(),
    }
    .context("lost the step's kvperf process")?;
    let output = match json {
        Some(path) if path.exists() => {
            // kvperf's own file, read as every input is: bounded, never a FIFO.
            let text = crate::files::read_input(
                path,
                "the step's result",
                crate::files::bound::STEP_RESULT,
            )
            .map_err(|e| anyhow::anyhow!("{e}"))?;
            // Removed only when it is a step's output: a user's file put at
            // the name while the step ran was read, then removed (pass 14).
            if !crate::output::json::is_step_output(text.as_bytes()) {
                let said = stderr
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .map_or(String::new(), |l| format!("; the step said: {}", l.trim()));
                anyhow::bail!(
                    "the step's output '{}' holds a file kvperf did not write (put there while the step ran?); it is left as it is{said}",
                    path.display()
                );
            }
            let _ = std::fs::remove_file(path);
            Some(StepOutput::from_json(&text).context("the step's result")?)
        }
        _ => None,
    };
    match output.as_ref().and_then(|o| o.error.as_ref()) {
        Some(StepError {
            kind: ErrorKind::Input,
            message,
        }) => return Err(InputError::Invalid(message.clone()).into()),
        // A run that failed says so inside its output, with what it
        // measured: the runner keeps it as a failed record.
        Some(_) => return Ok(output),
        None => {}
    }
    if status.success() {
        return Ok(output);
    }
    // No typed error: the child died or failed before it could say why.
    let command = args.first().map_or("", String::as_str);
    let how = match status.code() {
        Some(c) => format!("exited with {c}"),
        None => "was killed".into(),
    };
    let message = match stderr.lines().rev().find(|l| !l.trim().is_empty()) {
        Some(line) => format!(
            "{} (`kvperf {command}` {how})",
            line.trim_start_matches("kvperf: ")
        ),
        None => format!("`kvperf {command}` {how}"),
    };
    Err(if status.code() == Some(i32::from(EXIT_INPUT)) {
        InputError::Invalid(message).into()
    } else {
        anyhow::anyhow!(message)
    })
}

/// What may stand at a step's output path before the step: nothing, or a
/// result kvperf wrote there (an attempt of this pid's that died); a
/// user's file there is refused, never removed.
fn check_step_output(path: &Path) -> Result<(), InputError> {
    if std::fs::symlink_metadata(path).is_err() {
        // Nothing there (or its directory is made with the results).
        return Ok(());
    }
    crate::files::Destination::check(path, "a step's output", crate::output::STEP_JSON, &[])
        .map(drop)
}

/// Removes an earlier attempt's output (see [`check_step_output`]), so it
/// is never read as this step's.
fn clear_step_output(path: &Path) -> Result<(), InputError> {
    check_step_output(path)?;
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(InputError::Invalid(format!(
            "a step's output '{}' is left from an earlier attempt and cannot be removed: {e}",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// The longest results file name: 255 bytes less what
/// [`step_output_path`] adds (`.`, `.step-`, a pid of up to 7 digits,
/// `.json`).
const MAX_RESULTS_NAME: usize = 255 - 19;

fn step_output_path(results: &Path) -> PathBuf {
    let name = results
        .file_name()
        .map_or("results".into(), |n| n.to_string_lossy().into_owned());
    results.with_file_name(format!(".{name}.step-{}.json", std::process::id()))
}

/// The servers the current config needs, started by `kvperf server start`
/// in directories beside the results file (in the order the plan lists
/// them), and stopped (in reverse) when the runner moves on to a config
/// that needs others, or finishes.
struct Servers {
    base: PathBuf,
    /// The config they serve, and its servers.
    running: Option<(String, Vec<ServerStep>)>,
}

/// Where a plan's servers keep their data when its configs name no
/// directory: beside the results file.
fn servers_base(results: &Path) -> PathBuf {
    let stem = results
        .file_stem()
        .map_or_else(|| "results".into(), |s| s.to_string_lossy().into_owned());
    results.with_file_name(format!("{stem}-servers"))
}

/// The directory of `step`'s server `name`.
fn server_dir(step: &Step, base: &Path, name: &str) -> PathBuf {
    step.servers_dir
        .as_ref()
        .map_or_else(|| base.join(&step.config), Clone::clone)
        .join(name)
}

/// Each server directory a plan would start a server in has a path its
/// server can take ([`crate::server::check_dir`]): refused before the
/// first step, not at its config's.
fn check_server_dirs(p: &Prepared, results: &Path) -> Result<(), InputError> {
    let base = servers_base(results);
    for step in &p.steps {
        for server in &step.servers {
            crate::server::check_dir(&server_dir(step, &base, &server.name)).map_err(|e| {
                InputError::Invalid(format!(
                    "plan '{}' config '{}': {e}",
                    p.id.name, step.config
                ))
            })?;
        }
    }
    Ok(())
}

impl Servers {
    fn new(results: &Path) -> Self {
        Self {
            base: servers_base(results),
            running: None,
        }
    }

    /// Makes sure the servers `step` needs run, and only those.
    fn serve(&mut self, step: &Step) -> anyhow::Result<()> {
        let wanted: Vec<ServerStep> = step
            .servers
            .iter()
            .map(|s| ServerStep {
                name: s.name.clone(),
                dir: server_dir(step, &self.base, &s.name),
                nodes: s.nodes,
                port: s.port,
                settings: s
                    .settings
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_string()))
                    .collect(),
            })
            .collect();
        if self
            .running
            .as_ref()
            .is_some_and(|(config, _)| *config == step.config)
        {
            return Ok(());
        }
        self.stop()?;
        let mut started = Vec::new();
        for server in wanted {
            progress::server_starts(&server.words());
            let result = run_child(
                &StepCommand::ServerStart(server.clone()).args(),
                None,
                OnInterrupt::Stop,
            );
            started.push(server);
            // Record what runs before failing, so it is stopped too.
            self.running = Some((step.config.clone(), started.clone()));
            result.with_context(|| format!("config {}'s servers", step.config))?;
        }
        Ok(())
    }

    fn stop(&mut self) -> anyhow::Result<()> {
        if let Some((config, servers)) = self.running.take() {
            for server in servers.iter().rev() {
                run_child(&server.stop().args(), None, OnInterrupt::Finish)
                    .with_context(|| format!("stopping config {config}'s servers"))?;
            }
        }
        Ok(())
    }
}

impl Drop for Servers {
    /// A failed step still stops the servers it started.
    fn drop(&mut self) {
        let _ = self.stop();
    }
}
