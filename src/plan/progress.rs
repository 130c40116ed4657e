//! What a running plan tells its user on stderr, in one place: a line as
//! each step starts (where the plan is, its elapsed time and ETA), a
//! finished step's figures, the steps it skips and why, the stores it makes
//! again, the servers it starts and its last word. Each line is said by
//! [`say`]; the runner calls these and prints nothing itself.

use std::path::Path;
use std::time::{Duration, Instant};

use super::child::redacted_args;
use super::expand::Step;
use crate::results::step::Measurement;
use crate::results::Record;

/// The one place a plan's progress reaches stderr.
fn say(line: &str) {
    eprintln!("{line}");
}

/// What choosing the configurations noted (a `--db` for a config the plan
/// leaves out, ...).
pub(super) fn note(note: &str) {
    say(&format!("kvperf: {note}"));
}

/// The results file's torn last line, dropped.
pub(super) fn torn_tail(bytes: usize, results: &Path) {
    say(&format!(
        "kvperf: dropping an incomplete last line ({bytes} bytes) of '{}': a step interrupted while it was written",
        results.display()
    ));
}

/// Step `index` (of `total`), recorded earlier.
pub(super) fn done_earlier(index: usize, total: usize, step: &Step) {
    say(&format!(
        "[{}/{total}] {}: done earlier, skipped",
        index + 1,
        step.id
    ));
}

/// Step `index`, a repeat its cell's earlier repeats made unneeded.
pub(super) fn not_needed(index: usize, total: usize, step: &Step, enough: &str) {
    say(&format!(
        "[{}/{total}] {}: not needed, {enough}",
        index + 1,
        step.id
    ));
}

/// The servers of step `index`'s configuration did not start (`why`).
pub(super) fn unserved(index: usize, total: usize, config: &str, why: &str) {
    say(&format!(
        "[{}/{total}] config '{config}': {why}; its steps are recorded as failed and the other configurations go on (--fail-fast stops here)",
        index + 1,
    ));
}

/// The line that starts a step: where the plan is, how long it has run
/// and, once a step ran in this call, how long the `remaining` steps may
/// take at the pace of those (`ran` steps in `ran_time`).
pub(super) fn step_starts(
    (index, total): (usize, usize),
    step: &Step,
    started: Instant,
    (ran, ran_time): (u32, Duration),
    remaining: usize,
) {
    let eta = (ran > 0).then(|| ran_time / ran * remaining as u32);
    say(&format!(
        "[{}/{total}] {} ({} threads) - elapsed {}, ETA {}",
        index + 1,
        step.id,
        step.threads,
        clock(started.elapsed()),
        eta.map_or("-".into(), clock)
    ));
}

/// A YCSB step's inserts moved past the keys earlier steps inserted.
pub(super) fn inserts_start(at: &str) {
    say(&format!(
        "        inserts start at key {at}, past the keys earlier steps inserted into this store"
    ));
}

/// A cell whose repeats have not settled yet.
pub(super) fn unsettled(what: &str) {
    say(&format!("        {what}"));
}

/// A finished step's warnings, figures and verdict under its progress line.
pub(super) fn record(record: &Record) {
    for warning in &record.output.warnings {
        say(&format!("        warning: {warning}"));
    }
    if let Some(m) = record.measured() {
        say(&format!("        {}", one_line(m)));
        if let Some(v) = &m.verdict {
            say(&format!("        {}", v.line()));
        }
    }
}

/// The store of `config` is made again with its load `load_id`.
pub(super) fn remaking_store(config: &str, load_id: &str) {
    say(&format!(
        "        config '{config}': a step was interrupted while it changed this store; making it again with {load_id} (not recorded again)"
    ));
}

/// A server about to start, `words` following `kvperf server start`.
pub(super) fn server_starts(words: &[String]) {
    say(&server_start_line(words));
}

/// The plan's last word when every configuration ran.
pub(super) fn complete(name: &str, total: usize, results: &Path, ran: u32, started: Instant) {
    say(&format!(
        "plan '{name}' complete: {total} steps in '{}' ({ran} run now, in {})",
        results.display(),
        clock(started.elapsed()),
    ));
}

/// What a plan prints before it starts a server: its settings may hold a
/// password (`ferretdb_pg_url`), which stderr must not.
fn server_start_line(words: &[String]) -> String {
    format!(
        "        starting server: kvperf server start {}",
        redacted_args(words).join(" ")
    )
}

fn one_line(m: &Measurement) -> String {
    let mut line = format!(
        "{:.0} ops/s, {} ops in {:.1} s",
        m.ops_per_sec, m.operations, m.runtime_s
    );
    let failed = m.failed_operations();
    if failed > 0 {
        line.push_str(&format!(
            " ({failed} failed; {:.0} successful ops/s)",
            m.ok_ops_per_sec()
        ));
    }
    for (op, stats) in &m.ops {
        let l = &stats.latency;
        line.push_str(&format!(
            "; {} avg {:.0} us p99 {:.0} us",
            op.name(),
            l.avg_us,
            l.p99_us
        ));
        let failed = stats.unsuccessful();
        if failed > 0 {
            line.push_str(&format!(" ({failed} not OK)"));
        }
    }
    line
}

fn clock(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, s % 3600 / 60)
    } else {
        format!("{}m{:02}s", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_servers_start_line_hides_its_credentials() {
        let args: Vec<String> = [
            "ferretdb",
            "--dir",
            "/srv/f",
            "-p",
            "ferretdb_pg_url=postgres://kv:p@ss:w/rd@127.0.0.1:5432/kvperf",
            "-p",
            "redis_password=hunter2",
        ]
        .map(String::from)
        .into();
        let line = server_start_line(&args);
        assert_eq!(
            line,
            "        starting server: kvperf server start ferretdb --dir /srv/f \
             -p ferretdb_pg_url=postgres://kv:(redacted)@127.0.0.1:5432/kvperf \
             -p redis_password=(redacted)"
        );
    }
}
