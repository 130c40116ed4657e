//! Output formats of a step ([`crate::results::StepOutput`]): YCSB's text,
//! db_bench's text, and JSON, one file each, the way hyperfine's exporters
//! work: formats read the typed output, measurements know nothing of formats.

pub mod dbbench_text;
pub mod json;
pub mod run_header;
pub mod slow_reader;
pub mod stderr;
pub mod stdout;
pub mod ycsb_text;

use crate::files::{Destination, Written};

/// Output format of `kvperf load|run|merge`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// YCSB's text format: `[OVERALL], Throughput(ops/sec), ...`.
    Text,
    /// One JSON document: configuration, host facts, all figures and histograms.
    Json,
}

/// kvperf's JSON step output (`--format json`, `bench --json`): a JSON
/// object whose first key is `kvperf_step`, as [`json::to_pretty`] writes it.
pub const STEP_JSON: Written = Written {
    what: "kvperf JSON result",
    recognizes: json::is_step_output,
    extension: "json",
};

/// kvperf's text output written to a file: its first line is exactly
/// `# kvperf <semver> (<commit>) <command>` (see [`file_text`]; stdout
/// carries YCSB's or db_bench's lines alone). A line a user writes
/// (`# kvperf notes`) is not one.
pub const TEXT: Written = Written {
    what: "kvperf text result",
    recognizes: |head| {
        crate::files::signature::line(head, 0).is_some_and(crate::files::signature::is_text_header)
    },
    extension: "txt",
};

/// The first words of every text result kvperf writes to a file.
pub const TEXT_MARKER: &str = "# kvperf ";

/// What a `--output FILE` of `format` holds.
pub fn written_as(format: Format) -> Written {
    match format {
        Format::Json => STEP_JSON,
        Format::Text => TEXT,
    }
}

/// `text` as it goes into a file: text results get a first line naming
/// kvperf and the command, so a later run recognises the file as its own.
pub fn file_text(format: Format, command: &str, text: String) -> String {
    match format {
        Format::Json => text,
        Format::Text => format!(
            "{TEXT_MARKER}{} ({}) {command}\n{text}",
            env!("CARGO_PKG_VERSION"),
            env!("KVPERF_GIT_COMMIT")
        ),
    }
}

/// Writes the result of `command` to `destination` (as [`file_text`]),
/// else to stdout (see [`stdout`]).
pub fn emit(
    text: String,
    format: Format,
    command: &str,
    destination: Option<&Destination>,
) -> anyhow::Result<()> {
    match destination {
        // A stream gets what stdout would: no file marker.
        Some(d) if d.stream().is_some() => d.write(text.as_bytes()),
        Some(d) => d.write(file_text(format, command, text).as_bytes()),
        None => stdout::print_result(&text, written_as(format).extension),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_written_to_a_file_is_recognised_and_stdout_text_is_not() {
        let text = "[OVERALL], RunTime(ms), 10\n".to_string();
        let file = file_text(Format::Text, "run", text.clone());
        assert!((TEXT.recognizes)(file.as_bytes()));
        assert!(!(TEXT.recognizes)(text.as_bytes()));
        assert!(file.ends_with(&text));
        // A user's notes that begin like it are not kvperf's (issue 44).
        assert!(!(TEXT.recognizes)(b"# kvperf notes\nmine\n"));
    }
}
