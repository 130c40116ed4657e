//! Where a report's files go: checked before anything is measured, and
//! written only into the directory that was checked (a directory replaced
//! or re-linked while a plan ran is not written into), each file only in
//! place of kvperf's own.

use std::path::{Path, PathBuf};

use super::{build, csv, Study};
use crate::error::InputError;
use crate::files::signature::line;
use crate::files::{Destination, Written};

/// A report's directory as [`check_out`] found it: the directory that
/// stood there (its identity), or none, so that [`write`] writes into
/// that same directory or one it makes itself, never into one put there
/// since.
#[derive(Debug, Clone)]
pub struct ReportDir {
    path: PathBuf,
    flag: String,
    /// Device and inode of the directory checked; `None`: none stood there.
    checked: Option<(u64, u64)>,
}

impl ReportDir {
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn refuse(&self, why: &str) -> InputError {
        InputError::Invalid(format!("{} '{}' {why}", self.flag, self.path.display()))
    }

    /// The directory to write into, made now when none stood there at the
    /// check: still the one checked, or refused in one line.
    fn ready(&self) -> Result<(), InputError> {
        let standing = std::fs::metadata(&self.path).ok();
        match (self.checked, standing) {
            (Some(id), Some(meta)) if meta.is_dir() && crate::files::identity(&meta) == id => {
                Ok(())
            }
            (Some(_), _) => Err(self.replaced()),
            (None, Some(_)) => Err(self.refuse(
                "was made by another while kvperf measured (nothing stood there when it was \
                 checked), so kvperf writes nothing into it: give a new --report, or write the \
                 report with `kvperf report`",
            )),
            (None, None) => {
                if let Some(parent) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent).map_err(|e| {
                        self.refuse(&format!("cannot be created in '{}': {e}", parent.display()))
                    })?;
                }
                std::fs::create_dir(&self.path)
                    .map_err(|e| self.refuse(&format!("cannot be created: {e}")))
            }
        }
    }

    fn replaced(&self) -> InputError {
        self.refuse(
            "is no longer the directory checked before measuring (replaced or re-linked since), \
             so kvperf writes nothing into it: write the report with `kvperf report`",
        )
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
/// `dir`: a directory or a path kvperf can create one at, whose report
/// files are new or kvperf's own, and none of them one of `inputs`.
pub fn check_out(dir: &Path, flag: &str, inputs: &[&Path]) -> Result<ReportDir, InputError> {
    let refuse = |why: String| InputError::Invalid(format!("{flag} '{}' {why}", dir.display()));
    let place = |checked| ReportDir {
        path: dir.to_path_buf(),
        flag: flag.to_string(),
        checked,
    };
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {
            for (name, written) in FILES {
                Destination::check(&dir.join(name), flag, written, inputs)?;
            }
            Ok(place(Some(crate::files::identity(&meta))))
        }
        Ok(meta) => Err(refuse(format!(
            "is {}; a report is a directory of files",
            crate::files::kind_of(meta.file_type())
        ))),
        // Created when the report is written: its nearest existing
        // ancestor must be a directory.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            match dir
                .ancestors()
                .skip(1)
                .find(|a| a.as_os_str().is_empty() || a.exists())
            {
                Some(a) if !a.as_os_str().is_empty() && !a.is_dir() => Err(refuse(format!(
                    "cannot be created: '{}' is not a directory",
                    a.display()
                ))),
                _ => Ok(place(None)),
            }
        }
        Err(e) => Err(refuse(format!("cannot be checked: {e}"))),
    }
}

/// Writes report.md, report.csv and report.html into the directory
/// [`check_out`] checked (atomically each, and only in place of kvperf's
/// own), checking before each file that it is still that directory.
pub fn write(study: &Study, dir: &ReportDir, inputs: &[&Path]) -> anyhow::Result<()> {
    dir.ready()?;
    let checked = ReportDir {
        checked: std::fs::metadata(&dir.path)
            .ok()
            .map(|m| crate::files::identity(&m)),
        ..dir.clone()
    };
    let texts = [
        build(study, false).to_markdown(),
        csv(study),
        build(study, true).to_html(),
    ];
    for ((name, written), text) in FILES.into_iter().zip(texts) {
        checked.ready()?;
        Destination::check(&dir.path.join(name), "report file", written, inputs)?
            .write(signed(name, text).as_bytes())?;
    }
    Ok(())
}
