//! The results store: one JSON object per line, appended and fsynced as
//! each step finishes, so a crash or `kill -9` loses at most the step in
//! progress. A line cut short by a crash is the only damage possible; it is
//! dropped (and reported) before the next append, never half-parsed.

pub mod merge;
mod record;
pub mod step;

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::Context;

pub use record::{PlanId, Record, StepId, FORMAT};
pub use step::{Measurement, StepOutput};

use crate::error::InputError;

/// Finished records read from a results file.
#[derive(Debug, Default)]
pub struct Loaded {
    pub records: Vec<Record>,
    /// Bytes of an incomplete last line (a write interrupted by a crash).
    pub torn_tail: usize,
    /// Length of the file up to the last complete line.
    pub complete_len: u64,
    /// The last record is whole but has no line end (a user's editor or
    /// script dropped it): kept, and ended before the next is appended.
    pub unterminated: bool,
}

/// How every line kvperf appends to a results file starts.
const LINE_START: &[u8] = b"{\"kvperf_results\":";

/// Whether `tail`, an unterminated line starting like a record, is what a
/// write cut short leaves: a prefix of a record, whose parse fails only at
/// its end (after a crash, perhaps followed by the NUL bytes of blocks the
/// file's length reached before their data did).
fn is_torn(tail: &[u8]) -> bool {
    let end = tail.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    serde_json::from_slice::<serde::de::IgnoredAny>(&tail[..end]).is_err_and(|e| e.is_eof())
}

/// Reads every complete line of `path`; a missing file is empty. A file
/// that is not a kvperf results file (a user's notes, another format) is
/// refused with one line, and so is a path that is not a regular file.
pub fn read(path: &Path) -> anyhow::Result<Loaded> {
    if is_missing(path)? {
        return Ok(Loaded::default());
    }
    let bytes = crate::files::read_input_bytes(path, "results file", crate::files::bound::RESULTS)?;
    parse_bytes(path, &bytes)
}

/// Whether nothing stands at `path` (a dangling link is something: its
/// read names it); any other trouble looking is an error.
fn is_missing(path: &Path) -> Result<bool, InputError> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => Ok(false),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(e) => Err(InputError::Invalid(format!(
            "cannot read results file '{}': {e}",
            path.display()
        ))),
    }
}

/// A results file's bytes, read from `path` (named in errors).
pub fn parse_bytes(path: &Path, bytes: &[u8]) -> anyhow::Result<Loaded> {
    let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let tail = &bytes[complete..];
    // Only one of kvperf's own lines may be cut off as torn: one that
    // starts with kvperf's record signature, or the start of one after a
    // complete kvperf line (each complete line is parsed below). A file
    // holding only `{` or `{"a":1}` is a user's, and stays untouched.
    let signed = tail.starts_with(LINE_START);
    let after_a_record = complete > 0
        && LINE_START.starts_with(tail)
        && bytes[..complete].iter().any(|b| !b.is_ascii_whitespace());
    if !tail.is_empty() && !signed && !after_a_record {
        return Err(InputError::Invalid(format!(
            "results file '{}' is not a kvperf results file (its {} does not start like one); give a new --results path",
            path.display(),
            if complete == 0 { "text" } else { "last line" }
        ))
        .into());
    }
    let mut records = Vec::new();
    for (index, line) in bytes[..complete].split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let at = || format!("results file '{}' line {}", path.display(), index + 1);
        records.push(parse_line(line).map_err(|e| InputError::Invalid(format!("{}: {e}", at())))?);
    }
    // A last record whole but for its line end is a record, not a torn
    // write: cutting it lost a study's only record (pass 11).
    if signed {
        match parse_line(tail) {
            Ok(record) => {
                records.push(record);
                return Ok(Loaded {
                    records,
                    torn_tail: 0,
                    complete_len: bytes.len() as u64,
                    unterminated: true,
                });
            }
            // An edited record (a slip, a note after it) is refused as it
            // is with a line end; cutting it lost the record (pass 16).
            Err(e) if !is_torn(tail) => {
                let line = bytes[..complete].iter().filter(|&&b| b == b'\n').count() + 1;
                return Err(InputError::Invalid(format!(
                    "results file '{}' line {line}: {e}",
                    path.display()
                ))
                .into());
            }
            Err(_) => {}
        }
    }
    Ok(Loaded {
        records,
        torn_tail: tail.len(),
        complete_len: complete as u64,
        unterminated: false,
    })
}

/// The records of `path`: a results file of `kvperf plan run`, or one
/// step's output (`kvperf load|run|merge --format json`), which becomes a
/// record of its own named after the file (see [`Record::of_step`]).
pub fn read_records(path: &Path) -> anyhow::Result<Vec<Record>> {
    #[derive(serde::Deserialize)]
    struct Version {
        kvperf_step: Option<u32>,
    }
    // Read once, bounded: a step's output is smaller than a results file.
    let bytes = crate::files::read_input_bytes(path, "results file", crate::files::bound::RESULTS)?;
    if let Ok(text) = std::str::from_utf8(&bytes) {
        // A step's output is one JSON document; a results file is lines.
        if let Ok(Version {
            kvperf_step: Some(_),
        }) = serde_json::from_str(text)
        {
            let output = StepOutput::from_json(text)
                .map_err(|e| InputError::Invalid(format!("'{}': {e}", path.display())))?;
            let name = path
                .file_stem()
                .map_or_else(|| "result".into(), |s| s.to_string_lossy().into_owned());
            return Ok(vec![Record::of_step(output, &name)]);
        }
    }
    if let Some(not) = not_results(path, &bytes) {
        return Err(not.into());
    }
    Ok(parse_bytes(path, &bytes)?.records)
}

/// One line saying what `bytes`, read from `path` as results, are instead,
/// when they are not a kvperf results file (its first line is not one of
/// kvperf's records): empty, binary, a JSON of someone else's, other text.
/// What `kvperf report` and `compare` say of a file given by mistake.
fn not_results(path: &Path, bytes: &[u8]) -> Option<InputError> {
    use serde::de::IgnoredAny;
    let first = bytes
        .split(|&b| b == b'\n')
        .find(|line| !line.iter().all(u8::is_ascii_whitespace));
    let is_json = |b: &[u8]| serde_json::from_slice::<IgnoredAny>(b).is_ok();
    let what = match first {
        Some(line) if line.trim_ascii_start().starts_with(LINE_START) => return None,
        None if bytes.is_empty() => "it is empty",
        None => "it holds only blank lines",
        Some(_) if bytes.contains(&0) || std::str::from_utf8(bytes).is_err() => {
            "it holds binary data, not text"
        }
        Some(line) if is_json(line) || is_json(bytes) => {
            "it is JSON without kvperf's mark (kvperf_results on each line of a plan's results, kvperf_step in a step's JSON output)"
        }
        Some(_) => "its first line is not JSON",
    };
    Some(InputError::Invalid(format!(
        "'{}' is not a kvperf results file: {what}; give a plan's results (plan run --results) or a step's output written with --format json",
        path.display()
    )))
}

/// One plan's results, each step measured once, as `plan run` writes a
/// results file: a failed record may be followed by its retry, but a step
/// measured twice, or records of two plans, mean the file was joined or
/// edited. A report would count the copy as a repeat of the cell (four
/// copies of one run made a "slower" verdict at 95%), so such a file is
/// refused in one line naming the step.
pub fn check_one_plan_once_each(path: &Path, records: &[Record]) -> Result<(), InputError> {
    if let Some(first) = records.first() {
        if let Some(other) = records
            .iter()
            .find(|r| r.plan.fingerprint != first.plan.fingerprint)
        {
            return Err(InputError::Invalid(format!(
                "results file '{}' holds results of two plans ('{}', fingerprint {}, and '{}', fingerprint {}, from step {}): a plan run writes one plan's results to a file, so it was joined or edited; give each plan's results file on its own",
                path.display(),
                first.plan.name,
                first.plan.fingerprint,
                other.plan.name,
                other.plan.fingerprint,
                other.step.id
            )));
        }
    }
    let mut measured = std::collections::BTreeMap::<&str, usize>::new();
    for r in records.iter().filter(|r| r.output.error.is_none()) {
        let times = measured.entry(r.step.id.as_str()).or_default();
        *times += 1;
        if *times == 2 {
            return Err(InputError::Invalid(format!(
                "results file '{}' records step {} of plan '{}' as measured more than once: a plan run measures a step once (a failed record may be followed by its retry), so the file was joined or edited, and a copy would count as a repeat; give each plan run's results file on its own",
                path.display(),
                r.step.id,
                r.plan.name
            )));
        }
    }
    Ok(())
}

/// One line: its format version first, so an old file gets a clear line.
fn parse_line(line: &[u8]) -> Result<Record, String> {
    #[derive(serde::Deserialize)]
    struct Version {
        kvperf_results: Option<u32>,
    }
    let version: Version =
        serde_json::from_slice(line).map_err(|e| format!("not a kvperf result ({e})"))?;
    match version.kvperf_results {
        Some(FORMAT) => serde_json::from_slice(line)
            .map_err(|e| format!("a kvperf result that does not parse ({e})")),
        Some(newer) if newer > FORMAT => Err(format!(
            "written in results format {newer} by a newer kvperf; this kvperf reads format {FORMAT}: \
             read it with the kvperf that wrote it, or rerun the plan into a new results file"
        )),
        Some(old) => Err(format!(
            "written in results format {old} by an older kvperf; this kvperf reads format {FORMAT}: \
             rerun the plan into a new results file"
        )),
        None => Err("not a kvperf result (no kvperf_results version)".into()),
    }
}

/// An open results file that appends one durable line per record.
pub struct Appender {
    file: File,
    path: PathBuf,
    /// The opened file's (device, inode): what the name must still lead to.
    identity: (u64, u64),
    /// The file's length after kvperf's last write: what it must still
    /// hold before the next one (a user's `: > r.jsonl` cut it in place).
    end: u64,
}

impl Appender {
    /// Opens `path` for appending and locks it, so a second `plan run` on
    /// the same file is refused; returns the records already in it, after
    /// cutting an incomplete last line so the next record starts on a line
    /// of its own. Only a regular file of kvperf's results is opened.
    pub fn open(path: &Path) -> anyhow::Result<(Self, Loaded)> {
        // A new file another plan run removed between its open and its lock
        // (see [`remove_if_new_and_unused`]) is opened again.
        for _ in 0..3 {
            if let Some(opened) = Self::try_open(path)? {
                return Ok(opened);
            }
        }
        Err(InputError::Invalid(format!(
            "results file '{}' was removed or replaced each time it was opened (another plan run on it?); give another --results",
            path.display()
        ))
        .into())
    }

    /// [`Appender::open`] once; `None` when the name no longer leads to the
    /// file opened once it is locked.
    fn try_open(path: &Path) -> anyhow::Result<Option<(Self, Loaded)>> {
        // Only a regular file is opened (a FIFO's open would block); what
        // it holds is read once, under the lock.
        if !is_missing(path)? {
            if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(InputError::Invalid(format!(
                    "results file '{}' is a symbolic link; kvperf appends through no link: give the file's own path",
                    path.display()
                ))
                .into());
            }
            crate::files::require_regular(path, "results file")?;
        }
        // Never through a link planted since the check, never blocking:
        // a FIFO put there since is refused on the descriptor, not waited on.
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
            // The path given cannot be opened (`r.jsonl/`, `sub/.`): bad
            // input, before the first step (exit 2, not 3).
            .map_err(|e| {
                InputError::Invalid(format!(
                    "cannot open results file '{}': {e}",
                    path.display()
                ))
            })?;
        let meta = crate::files::opened_input(&file, path, "results file")?;
        crate::files::owned::check_own(&file)
            .map_err(|e| InputError::Invalid(format!("results file '{}': {e}", path.display())))?;
        if let Err(e) = file.try_lock() {
            return Err(match e {
                std::fs::TryLockError::WouldBlock => InputError::Invalid(format!(
                    "results file '{}' is in use by another kvperf plan run; wait for it or give another --results",
                    path.display()
                ))
                .into(),
                std::fs::TryLockError::Error(e) => anyhow::anyhow!(
                    "cannot lock results file '{}': {e}",
                    path.display()
                ),
            });
        }
        // Locked: still the file at the name? (A plan run refused before it
        // could lock removes a new empty file it found unlocked.)
        let here = std::fs::symlink_metadata(path).ok();
        if here.is_none_or(|m| crate::files::identity(&m) != crate::files::identity(&meta)) {
            return Ok(None);
        }
        // Read again under the lock: the file is now ours alone.
        let bytes = crate::files::read_opened(
            &file,
            &meta,
            path,
            "results file",
            crate::files::bound::RESULTS,
        )?;
        let loaded = parse_bytes(path, &bytes)?;
        if loaded.torn_tail > 0 {
            file.set_len(loaded.complete_len)
                .and_then(|_| file.sync_all())
                .with_context(|| format!("cannot repair results file '{}'", path.display()))?;
        }
        if loaded.unterminated {
            (&file)
                .write_all(b"\n")
                .and_then(|_| file.sync_all())
                .with_context(|| {
                    format!(
                        "cannot end the last line of results file '{}'",
                        path.display()
                    )
                })?;
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            // A new file's directory entry must be durable too.
            File::open(dir).and_then(|d| d.sync_all()).ok();
        }
        let end = file
            .metadata()
            .with_context(|| format!("cannot read results file '{}'", path.display()))?
            .len();
        Ok(Some((
            Self {
                file,
                path: path.to_path_buf(),
                identity: crate::files::identity(&meta),
                end,
            },
            loaded,
        )))
    }

    /// Appends `record` as one line with a single write, then fsyncs. On
    /// failure (a full disk) the partial line is cut off again. The name
    /// must still lead to the file opened, before and after the write: an
    /// editor's save or `sed -i` replaced it with a copy while a plan ran,
    /// and every later step went into the unnamed file, the plan saying it
    /// completed (pass 12). Nor may the file have changed in place since
    /// kvperf's last write: truncated (`: > r.jsonl`), the records before
    /// went with it, and the plan said it completed (pass 13).
    pub fn append(&mut self, record: &Record) -> anyhow::Result<()> {
        let mut line = serde_json::to_vec(record)?;
        line.push(b'\n');
        if !self.still_named() {
            return Err(self.kept_apart(&self.gone(), &line));
        }
        let before = match self.file.metadata() {
            Ok(meta) if meta.len() == self.end => self.end,
            Ok(meta) => return Err(self.kept_apart(&self.changed(meta.len()), &line)),
            Err(e) => {
                let shown = format!("cannot read results file '{}': {e}", self.path.display());
                return Err(self.kept_apart(&shown, &line));
            }
        };
        let written = self
            .file
            .write_all(&line)
            .and_then(|_| self.file.sync_data());
        if let Err(e) = written {
            let _ = self.file.set_len(before);
            let shown = format!(
                "cannot append to results file '{}': {e}; the results already in it are intact",
                self.path.display()
            );
            return Err(self.kept_apart(&shown, &line));
        }
        self.end = before + line.len() as u64;
        if !self.still_named() {
            return Err(self.kept_apart(&self.gone(), &line));
        }
        Ok(())
    }

    fn changed(&self, len: u64) -> String {
        format!(
            "results file '{}' was changed in place while the plan ran (truncated, or written by another program?): it holds {len} bytes where kvperf left {}, and kvperf appends to no file it cannot vouch for; a rerun goes on from what that file holds",
            self.path.display(),
            self.end
        )
    }

    /// Whether the results file's name still leads to the file opened.
    fn still_named(&self) -> bool {
        std::fs::symlink_metadata(&self.path)
            .is_ok_and(|here| crate::files::identity(&here) == self.identity)
    }

    fn gone(&self) -> String {
        format!(
            "results file '{}' was replaced or removed while the plan ran (an editor's save, `sed -i`, `rm`?): what stands there now is not the file kvperf opened, and it appends to no other; a rerun goes on from what that file holds",
            self.path.display()
        )
    }

    /// `shown` as an error, with this step's record kept apart, never
    /// dropped.
    fn kept_apart(&self, shown: &str, line: &[u8]) -> anyhow::Error {
        // Beside the results file only in the directory that still holds it.
        let near = crate::files::HeldDir::holding(&self.path, self.identity);
        match crate::files::keep_unsaved(line, near.as_ref(), "jsonl") {
            Ok(kept) => anyhow::anyhow!(
                "{shown}; this step's record is kept in '{}'",
                kept.display()
            ),
            Err(lost) => anyhow::anyhow!(
                "{shown}; this step's record could not be kept elsewhere either ({lost})"
            ),
        }
    }
}

/// Removes the results file at `path` when it is empty and no plan run
/// holds it: one this plan run found absent and made, then left without a
/// record (bad input). Another plan run started at the same moment may
/// have made the file this one found: it holds it locked, so it stays.
pub fn remove_if_new_and_unused(path: &Path) {
    let Ok(file) = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
    else {
        return;
    };
    let Ok(meta) = file.metadata() else {
        return;
    };
    if !meta.is_file() || meta.len() != 0 || file.try_lock().is_err() {
        return;
    }
    // Under the lock: still the file at the name, and still empty.
    let here = std::fs::symlink_metadata(path).ok();
    let same = here.is_some_and(|m| crate::files::identity(&m) == crate::files::identity(&meta));
    if same && file.metadata().is_ok_and(|m| m.len() == 0) {
        let _ = std::fs::remove_file(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str) -> Record {
        Record {
            kvperf_results: FORMAT,
            plan: PlanId {
                name: "p".into(),
                fingerprint: "f".into(),
                scale: 1.0,
                file: String::new(),
                ratios: false,
                ..Default::default()
            },
            step: StepId {
                id: id.into(),
                config: "c".into(),
                kind: "run".into(),
                workload: "a".into(),
                label: String::new(),
                threads: 4,
                repeat: 1,
                db: String::new(),
            },
            started_at_unix_ms: 0,
            finished_at_unix_ms: 0,
            before: Vec::new(),
            command: Vec::new(),
            output: StepOutput::begin("run"),
        }
    }

    #[test]
    fn appended_records_read_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let (mut out, _) = Appender::open(&path).unwrap();
        out.append(&record("x")).unwrap();
        out.append(&record("y")).unwrap();
        let loaded = read(&path).unwrap();
        let ids: Vec<_> = loaded.records.iter().map(|r| r.step.id.as_str()).collect();
        assert_eq!(ids, ["x", "y"]);
        assert_eq!(loaded.torn_tail, 0);
    }

    #[test]
    fn a_torn_last_line_is_dropped_and_cut_before_the_next_append() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let (mut out, _) = Appender::open(&path).unwrap();
        out.append(&record("x")).unwrap();
        drop(out);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"kvperf_results\":2,\"pl").unwrap();
        let loaded = read(&path).unwrap();
        assert_eq!(loaded.records.len(), 1);
        assert_eq!(loaded.torn_tail, 23);
        let (mut out, reopened) = Appender::open(&path).unwrap();
        assert_eq!(reopened.records.len(), 1);
        out.append(&record("y")).unwrap();
        let again = read(&path).unwrap();
        assert_eq!(again.records.len(), 2);
        assert_eq!(again.torn_tail, 0);
    }

    #[test]
    fn a_whole_last_record_without_its_line_end_is_kept_and_ended() {
        // `printf %s "$(cat r.jsonl)" > r.jsonl` drops the last line end: the
        // record was cut as torn, a study's only one with it (pass 11).
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let (mut out, _) = Appender::open(&path).unwrap();
        out.append(&record("x")).unwrap();
        drop(out);
        let text = std::fs::read(&path).unwrap();
        std::fs::write(&path, &text[..text.len() - 1]).unwrap();
        let loaded = read(&path).unwrap();
        assert_eq!(loaded.records.len(), 1);
        assert_eq!(loaded.torn_tail, 0);
        let (mut out, reopened) = Appender::open(&path).unwrap();
        assert_eq!(reopened.records.len(), 1);
        out.append(&record("y")).unwrap();
        let again = read(&path).unwrap();
        let ids: Vec<_> = again.records.iter().map(|r| r.step.id.as_str()).collect();
        assert_eq!(ids, ["x", "y"]);
        assert!(!again.unterminated);
    }

    #[test]
    fn an_edited_last_record_without_its_line_end_is_refused_untouched() {
        // A torn write is a prefix of a record; an edit fails mid-line
        // (pass 16: these were cut as torn, the record lost).
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let (mut out, _) = Appender::open(&path).unwrap();
        out.append(&record("x")).unwrap();
        out.append(&record("y")).unwrap();
        drop(out);
        let text = std::fs::read_to_string(&path).unwrap();
        let last = text.lines().nth(1).unwrap();
        let first = &text[..text.len() - last.len() - 1];
        for edit in [
            format!("{} x", &last[..last.len() - 1]),
            last.replacen("\"threads\":4", "\"threads\":4x", 1),
            format!("{last} // checked"),
            last.replacen("\"threads\":4", "\"threads\":\"4\"", 1),
        ] {
            std::fs::write(&path, format!("{first}{edit}")).unwrap();
            let err = read(&path).unwrap_err().to_string();
            assert!(err.contains("line 2"), "{edit}: {err}");
            let err = Appender::open(&path).err().unwrap().to_string();
            assert!(err.contains("line 2"), "{edit}: {err}");
            assert_eq!(
                std::fs::read_to_string(&path).unwrap(),
                format!("{first}{edit}")
            );
        }
        for cut in [LINE_START.len(), last.len() / 2, last.len() - 1] {
            for nuls in [0, 512] {
                let torn = format!("{}{}", &last[..cut], "\0".repeat(nuls));
                std::fs::write(&path, format!("{first}{torn}")).unwrap();
                let loaded = read(&path).unwrap();
                assert_eq!(loaded.records.len(), 1, "{cut} {nuls}");
                assert_eq!(loaded.torn_tail, torn.len());
            }
        }
    }

    #[test]
    fn a_corrupt_complete_line_is_an_error_naming_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        std::fs::write(&path, "not json\n").unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(err.contains("line 1"), "{err}");
    }

    #[test]
    fn an_older_format_is_refused_with_its_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        std::fs::write(&path, "{\"kvperf_results\":1,\"plan\":{}}\n").unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(
            err.contains("line 1") && err.contains("results format 1") && err.contains("format 2"),
            "{err}"
        );
    }

    #[test]
    fn a_full_disk_is_a_clear_error() {
        // /dev/full fails every write with ENOSPC, as a full disk does.
        let dir = tempfile::tempdir().unwrap();
        // The name leads to a results file; the writes go to /dev/full.
        let path = dir.path().join("r.jsonl");
        std::fs::write(&path, "").unwrap();
        let mut out = Appender {
            file: OpenOptions::new().append(true).open("/dev/full").unwrap(),
            identity: crate::files::identity(&std::fs::metadata(&path).unwrap()),
            path,
            end: 0,
        };
        let err = out.append(&record("x")).unwrap_err().to_string();
        assert!(err.contains("No space left on device"), "{err}");
        let kept = err
            .split("kept in '")
            .nth(1)
            .unwrap()
            .trim_end_matches('\'');
        assert!(Path::new(kept).starts_with(dir.path()), "{kept}");
        let line = std::fs::read(kept).unwrap();
        assert_eq!(parse_line(line.trim_ascii_end()).unwrap().step.id, "x");
    }

    #[test]
    fn only_a_regular_file_of_kvperf_results_is_opened() {
        let err = Appender::open(Path::new("/dev/full"))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("is a character device"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        for foreign in [
            "my notes, no newline",
            "{\"a\": 1}",
            "\u{0}\u{1}binary",
            // Starts of a kvperf line, but nothing proves kvperf wrote them.
            "{",
            "{\"kvperf_res",
            "\n{",
            "{\"a\":1}",
        ] {
            let path = dir.path().join("notes");
            std::fs::write(&path, foreign).unwrap();
            let err = Appender::open(&path).err().unwrap().to_string();
            assert!(err.contains("is not a kvperf results file"), "{err}");
            assert_eq!(
                std::fs::read_to_string(&path).unwrap(),
                foreign,
                "left as it was"
            );
        }
    }

    /// A results file replaced by a copy (an editor's save) or removed
    /// while a plan runs: the next record goes into neither file, it is
    /// kept apart and the append fails; the copy is left as it was.
    #[test]
    fn a_results_file_replaced_or_removed_is_appended_to_no_more() {
        for replace in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("r.jsonl");
            let (mut out, _) = Appender::open(&path).unwrap();
            out.append(&record("001")).unwrap();
            let copy = dir.path().join("copy");
            std::fs::copy(&path, &copy).unwrap();
            if replace {
                std::fs::rename(&copy, &path).unwrap();
            } else {
                std::fs::remove_file(&path).unwrap();
            }
            let err = out.append(&record("002")).unwrap_err().to_string();
            assert!(err.contains("was replaced or removed"), "{err}");
            assert!(err.contains("record is kept in"), "{err}");
            if replace {
                let ids: Vec<String> = read_records(&path)
                    .unwrap()
                    .iter()
                    .map(|r| r.step.id.clone())
                    .collect();
                assert_eq!(ids, ["001"]);
            } else {
                assert!(!path.exists());
            }
            // Kept where the error says: not beside a file that is no
            // longer the one opened (pass 16), so in the temporary directory.
            let kept = err
                .split("record is kept in '")
                .nth(1)
                .and_then(|k| k.split('\'').next())
                .unwrap_or_else(|| panic!("{err}"));
            let text = std::fs::read_to_string(kept).unwrap();
            assert!(text.contains("\"002\""), "{text}");
            let _ = std::fs::remove_file(kept);
        }
    }

    /// A results file cut or written in place while a plan runs: the next
    /// record goes into it no more (it would sit there alone, the plan
    /// saying it completed), it is kept apart and the append fails.
    #[test]
    fn a_results_file_changed_in_place_is_appended_to_no_more() {
        for cut in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("r.jsonl");
            let (mut out, _) = Appender::open(&path).unwrap();
            out.append(&record("001")).unwrap();
            out.append(&record("002")).unwrap();
            let other = OpenOptions::new().append(true).open(&path).unwrap();
            if cut {
                other.set_len(0).unwrap();
            } else {
                (&other).write_all(b"{}\n").unwrap();
            }
            let err = out.append(&record("003")).unwrap_err().to_string();
            assert!(err.contains("was changed in place"), "{err}");
            assert!(err.contains("record is kept in"), "{err}");
            let held = std::fs::read(&path).unwrap();
            assert!(!String::from_utf8_lossy(&held).contains("003"));
        }
    }

    #[test]
    fn a_second_appender_on_one_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let _first = Appender::open(&path).unwrap();
        let err = Appender::open(&path).err().unwrap().to_string();
        assert!(err.contains("in use by another kvperf plan run"), "{err}");
    }
}

/// Typed records for unit tests of readers (report, merge).
#[cfg(test)]
pub mod testing {
    use super::step::{op_stats, Measurement, StepOutput};
    use super::*;
    use crate::measure::{OpHistograms, OpKind};

    /// A run step of `config` at `threads`, measuring `ops_per_sec`, with
    /// one successful operation of `op` per latency in `latencies_ns`.
    pub fn record(
        config: &str,
        workload: &str,
        threads: u64,
        ops_per_sec: f64,
        op: OpKind,
        latencies_ns: &[u64],
    ) -> Record {
        let mut h = OpHistograms::new();
        for &ns in latencies_ns {
            h.record(op, ns, None, &Ok(()));
        }
        let mut output = StepOutput::begin("run");
        output.measurements.push(Measurement {
            name: "run".into(),
            threads: threads as usize,
            clients: Default::default(),
            target_ops_per_sec: 0.0,
            warmup_s: 0.0,
            start_unix_ms: 0,
            end_unix_ms: 10_000,
            runtime_s: 10.0,
            operations: latencies_ns.len() as u64,
            ops_per_sec,
            hit_time_limit: false,
            ops: op_stats(&h),
            intervals: Vec::new(),
            timeline: None,
            accounting: None,
            engine_stats: Default::default(),
            engine_stats_before: Default::default(),
            integrity: None,
            db_bench: None,
            verdict: None,
            device: None,
            events: None,
        });
        Record {
            kvperf_results: FORMAT,
            plan: PlanId {
                name: "p".into(),
                fingerprint: "f".into(),
                scale: 1.0,
                file: String::new(),
                ratios: false,
                ..Default::default()
            },
            step: StepId {
                id: format!("{config}/{workload}-t{threads}"),
                config: config.into(),
                kind: "run".into(),
                workload: workload.into(),
                label: String::new(),
                threads,
                repeat: 1,
                db: String::new(),
            },
            started_at_unix_ms: 0,
            finished_at_unix_ms: 0,
            before: Vec::new(),
            command: Vec::new(),
            output,
        }
    }
}
