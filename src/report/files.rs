//! Where a report's files go: checked (or made) before anything is
//! measured, and written only into that directory (one replaced or
//! re-linked while a plan ran is not written into), each file only in
//! place of kvperf's own.

use std::path::{Path, PathBuf};

use super::{build, csv, Study};
use crate::error::InputError;
use crate::files::signature::line;
use crate::files::{Destination, HeldDir, Written};

/// A report's directory as [`check_out`] left it: the directory that
/// stood there, or the one it made (before anything was measured, so that
/// nothing put there since is taken for kvperf's), known by its identity;
/// [`write`] writes into that same directory only.
#[derive(Debug, Clone)]
pub struct ReportDir {
    path: PathBuf,
    flag: String,
    /// The directory checked or made: device and inode, and its birth time
    /// where the filesystem keeps one (an inode number is reused by a
    /// directory made just after one is removed).
    checked: Identity,
    /// The topmost directory [`check_out`] made for it, if it made any.
    made: Option<PathBuf>,
    /// The directory checked or made, held open: its files are checked and
    /// written there, never through what its name leads to later.
    held: HeldDir,
}

type Identity = ((u64, u64), Option<std::time::SystemTime>);

fn identity(meta: &std::fs::Metadata) -> Identity {
    (crate::files::identity(meta), meta.created().ok())
}

impl ReportDir {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Still the directory checked, or one line saying it is not.
    fn ready(&self) -> Result<(), InputError> {
        match std::fs::metadata(&self.path) {
            Ok(meta) if meta.is_dir() && identity(&meta) == self.checked => Ok(()),
            _ => Err(InputError::Invalid(format!(
                "{} '{}' is no longer the directory checked before measuring (replaced or \
                 re-linked since), so kvperf writes nothing into it: write the report with \
                 `kvperf report`",
                self.flag,
                self.path.display()
            ))),
        }
    }

    /// Removes what [`check_out`] made, when no report was written: each
    /// directory from the report's up to the topmost it made, while still
    /// the one made and empty (`rmdir` removes no directory with anything in it).
    pub fn discard(&self) {
        let Some(top) = &self.made else {
            return;
        };
        if self.ready().is_err() {
            return;
        }
        for dir in self.path.ancestors() {
            if std::fs::remove_dir(dir).is_err() || dir == top.as_path() {
                return;
            }
        }
    }
}

/// The files of a report, each with how kvperf recognises one it wrote:
/// kvperf's signature line in report.md and report.html (an HTML comment,
/// unseen when rendered), report.csv's whole header, never a prefix a
/// user may type (`# kvperf report: my notes`).
const FILES: [(&str, Written); 3] = [
    (
        "report.md",
        Written {
            what: "kvperf report",
            recognizes: |head| line(head, 0) == Some(MD_SIGNATURE),
            extension: "md",
        },
    ),
    (
        "report.csv",
        Written {
            what: "kvperf report table",
            recognizes: |head| line(head, 0).is_some_and(csv::is_header),
            extension: "csv",
        },
    ),
    (
        "report.html",
        Written {
            what: "kvperf HTML report",
            recognizes: |head| {
                line(head, 0) == Some("<!DOCTYPE html>") && line(head, 1) == Some(HTML_SIGNATURE)
            },
            extension: "html",
        },
    ),
];

/// The first line of a report.md kvperf writes.
const MD_SIGNATURE: &str = "<!-- kvperf-file/1 report.md -->";
/// The second line of a report.html kvperf writes, after its doctype.
const HTML_SIGNATURE: &str = "<!-- kvperf-file/1 report.html -->";

/// `text` of report file `name` with kvperf's signature put in.
fn signed(name: &str, text: String) -> String {
    match name {
        "report.md" => format!("{MD_SIGNATURE}\n{text}"),
        "report.html" => match text.split_once('\n') {
            Some((doctype, rest)) => format!("{doctype}\n{HTML_SIGNATURE}\n{rest}"),
            None => text,
        },
        _ => text,
    }
}

/// Checks, before anything is measured, that a report may be written into
/// `dir`: a directory whose report files are new or kvperf's own, none of
/// them one of `inputs`, or a path where it makes one now (see
/// [`ReportDir::discard`] when no report is written after all).
pub fn check_out(dir: &Path, flag: &str, inputs: &[&Path]) -> Result<ReportDir, InputError> {
    let refuse = |why: String| InputError::Invalid(format!("{flag} '{}' {why}", dir.display()));
    let place = |made: Option<PathBuf>| -> Result<ReportDir, InputError> {
        let held = HeldDir::open(dir).map_err(|e| refuse(format!("cannot be opened: {e}")))?;
        let meta = held
            .metadata(".")
            .map_err(|e| refuse(format!("cannot be checked: {e}")))?;
        // A directory it just made holds nothing to check (and no
        // probe's temporary appears before a signal is caught, pass 9).
        if made.is_none() {
            for (name, written) in FILES {
                Destination::check_in(&held, name, flag, written, inputs)?;
            }
        }
        Ok(ReportDir {
            path: dir.to_path_buf(),
            flag: flag.to_string(),
            checked: identity(&meta),
            made,
            held,
        })
    };
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => place(None),
        Ok(meta) => Err(refuse(format!(
            "is {}; a report is a directory of files",
            crate::files::kind_of(meta.file_type())
        ))),
        // Made now, before anything is measured: its nearest existing
        // ancestor must be a directory.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let missing: Vec<&Path> = dir
                .ancestors()
                .take_while(|a| !a.as_os_str().is_empty() && std::fs::symlink_metadata(a).is_err())
                .collect();
            let top = missing.last().map_or(dir, |a| *a);
            if let Some(a) = top
                .parent()
                .filter(|a| !a.as_os_str().is_empty() && !a.is_dir())
            {
                return Err(refuse(format!(
                    "cannot be created: '{}' is not a directory",
                    a.display()
                )));
            }
            for (made, a) in missing.iter().rev().enumerate() {
                if let Err(e) = std::fs::create_dir(a) {
                    // Those made before it go again (`new/..`: `new` made,
                    // then `new/..` exists): a refused report leaves nothing.
                    for made in missing.iter().rev().take(made).rev() {
                        let _ = std::fs::remove_dir(made);
                    }
                    return Err(refuse(format!(
                        "cannot be created ('{}': {e})",
                        a.display()
                    )));
                }
            }
            place(Some(top.to_path_buf()))
        }
        Err(e) => Err(refuse(format!("cannot be checked: {e}"))),
    }
}

/// Writes report.md, report.csv and report.html into the directory
/// [`check_out`] checked (atomically each, and only in place of kvperf's
/// own), checking before each file that it is still that directory.
pub fn write(study: &Study, dir: &ReportDir, inputs: &[&Path]) -> anyhow::Result<()> {
    let texts = [
        build(study, false).to_markdown(),
        csv(study),
        build(study, true).to_html(),
    ];
    // From here an interrupt waits for the three writes (a moment): a
    // signal's default would leave a hidden temporary beside a file and
    // the report half new; the caller says it came ([`crate::runner::interrupted`]).
    crate::runner::stop_on_interrupt();
    for ((name, written), text) in FILES.into_iter().zip(texts) {
        dir.ready()?;
        Destination::check_in(&dir.held, name, "report file", written, inputs)?
            .write(signed(name, text).as_bytes())?;
    }
    Ok(())
}
