//! What a YCSB-mode step is about to run, stated on stderr before it
//! runs, so parsers of stdout are untouched. YCSB's client prints
//! `Command line: ARGS` and its version first; kvperf does the same, then
//! one line on the store and one on the study: engine, store and what it
//! holds, clients, records and their size, operations, target.
//! (`kvperf bench` states its command line the same way; the rest is in
//! db_bench's own header on stdout.)

use std::fmt::Write;
use std::time::Duration;

use crate::properties::redacted_arg;
use crate::results::step::Clients;

/// [`command_line`] of what this process was started with.
pub fn this_command_line() -> String {
    let typed: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    command_line(&typed)
}

/// YCSB's first line: the arguments after the program name, joined by
/// spaces, each credential (`-p postgres.password=...`, a URL's password)
/// redacted, and an argument with spaces or quotes single-quoted.
pub fn command_line(args: &[String]) -> String {
    let shown: Vec<String> = args.iter().map(|a| quoted(&redacted_arg(a))).collect();
    format!("Command line: {}", shown.join(" "))
}

fn quoted(arg: &str) -> String {
    if arg.is_empty()
        || arg
            .chars()
            .any(|c| c.is_whitespace() || "'\"$`\\".contains(c))
    {
        format!("'{}'", arg.replace('\'', r"'\''"))
    } else {
        arg.to_string()
    }
}

/// The store a step works on and what kvperf knows it holds.
pub struct Store {
    /// The data directory, or where a server keeps it.
    pub location: String,
    /// Records in the range the step reads that kvperf's loads inserted;
    /// None when kvperf cannot know (a server, an adopted store).
    pub loaded: Option<u64>,
}

/// Everything the header states.
pub struct RunHeader {
    pub phase: &'static str,
    pub engine: String,
    pub engine_version: String,
    pub store: Option<Store>,
    pub threads: usize,
    /// How the `threads` clients run: threads, or tasks on workers.
    pub clients: Clients,
    pub target_ops_per_sec: f64,
    pub record_count: u64,
    pub field_count: u64,
    /// Each field's length, described (`100 B`, `1..100 B uniform`).
    pub field_length: String,
    /// The operations this phase performs; None: until the time limit.
    pub operations: Option<u64>,
    pub max_execution: Option<Duration>,
}

impl RunHeader {
    /// The lines after `Command line:`.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "kvperf {} ({})",
            env!("CARGO_PKG_VERSION"),
            env!("KVPERF_GIT_COMMIT")
        );
        let version = if self.engine_version.is_empty() {
            String::new()
        } else {
            format!(" {}", self.engine_version)
        };
        let store = match &self.store {
            None => String::new(),
            Some(Store {
                location,
                loaded: Some(n),
            }) => format!(", store {location} ({n} of these records loaded by kvperf)"),
            Some(Store {
                location,
                loaded: None,
            }) => format!(", store {location}"),
        };
        let _ = writeln!(out, "Engine: {}{version}{store}", self.engine);
        let ops = match (self.operations, self.max_execution) {
            (Some(n), Some(t)) => format!("{n} operations or {} s", t.as_secs_f64()),
            (Some(n), None) => format!("{n} operations"),
            (None, Some(t)) => format!("for {} s", t.as_secs_f64()),
            (None, None) => "no operations".into(),
        };
        let target = if self.target_ops_per_sec > 0.0 {
            format!("target {:.0} ops/s", self.target_ops_per_sec)
        } else {
            "no target (as fast as possible)".into()
        };
        let who = self.clients.describe(self.threads);
        let _ = writeln!(
            out,
            "Study: {}, recordcount {} ({} fields x {} each), {ops}, {who}, {target}",
            self.phase, self.record_count, self.field_count, self.field_length,
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_ycsbs_with_credentials_redacted_and_spaces_quoted() {
        let args: Vec<String> = [
            "run",
            "-P",
            "workloads/workloadc",
            "-p",
            "postgres.password=hunter2",
            "-p",
            "mongodb.url=mongodb://me:hunter2@db:27017",
            "-l",
            "two words",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let line = command_line(&args);
        assert!(!line.contains("hunter2"), "{line}");
        assert_eq!(
            line,
            "Command line: run -P workloads/workloadc -p postgres.password=(redacted) \
             -p mongodb.url=mongodb://me:(redacted)@db:27017 -l 'two words'"
        );
    }

    #[test]
    fn the_header_names_engine_store_records_and_load() {
        let header = RunHeader {
            phase: "run",
            engine: "rocksdb".into(),
            engine_version: "9.10.0".into(),
            store: Some(Store {
                location: "/tmp/s".into(),
                loaded: Some(0),
            }),
            threads: 4,
            clients: Clients::Threads,
            target_ops_per_sec: 0.0,
            record_count: 1000,
            field_count: 10,
            field_length: "100 B".into(),
            operations: Some(5000),
            max_execution: None,
        }
        .render();
        assert!(header.starts_with("kvperf "), "{header}");
        assert!(
            header.contains(
                "Engine: rocksdb 9.10.0, store /tmp/s (0 of these records loaded by kvperf)"
            ),
            "{header}"
        );
        assert!(
            header.contains("Study: run, recordcount 1000 (10 fields x 100 B each), 5000 operations, 4 threads, no target"),
            "{header}"
        );
    }

    #[test]
    fn the_header_says_how_the_clients_run() {
        let study = |threads, clients| {
            let header = RunHeader {
                phase: "run",
                engine: "postgres".into(),
                engine_version: String::new(),
                store: None,
                threads,
                clients,
                target_ops_per_sec: 0.0,
                record_count: 10,
                field_count: 1,
                field_length: "1 KB".into(),
                operations: None,
                max_execution: Some(Duration::from_secs(5)),
            }
            .render();
            let line = header.lines().find(|l| l.starts_with("Study: ")).unwrap();
            line.split(", ").nth(3).unwrap().to_string()
        };
        let tasks = |runtime_threads, pinned| Clients::Tasks {
            runtime_threads,
            pinned,
        };
        assert_eq!(study(1, Clients::Threads), "1 thread");
        assert_eq!(
            study(16, tasks(2, true)),
            "16 clients as tasks on 2 workers (each client pinned to one)"
        );
        assert_eq!(
            study(4, tasks(2, false)),
            "4 clients as tasks on 2 work-stealing workers"
        );
    }
}
