//! Emptying a directory engine's store (`--fresh`) so that a kill at any
//! moment leaves a store kvperf knows is incomplete: first a trash
//! directory of kvperf's own appears, atomically and carrying kvperf's
//! signature; then the engine's files move into it; then it is deleted,
//! last of all. While it stands, the store is incomplete: a run refuses
//! it in one line and the next `--fresh` finishes the emptying. (Deleting
//! in directory order left RocksDB's CURRENT without its MANIFEST.)

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::EngineDirs;
use crate::error::InputError;
use crate::files::owned;

/// The trash directory's name in a data directory.
pub const TRASH: &str = ".kvperf-emptying";
/// The file inside it that proves it is kvperf's.
const SIGNATURE_FILE: &str = ".kvperf-trash";

fn signature() -> String {
    format!("{}\n", crate::files::signature::token("store-trash"))
}

/// Whether the emptying of the store in `dir` was interrupted (kvperf's
/// trash directory stands there). A `.kvperf-emptying` kvperf did not
/// make is refused by name.
pub fn interrupted(dir: &Path) -> anyhow::Result<bool> {
    let trash = dir.join(TRASH);
    let meta = match fs::symlink_metadata(&trash) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e).with_context(|| format!("cannot read '{}'", trash.display())),
        Ok(meta) => meta,
    };
    let own = meta.is_dir() && {
        let names = names(&trash)?;
        // Empty: its signature went last but one, just before it.
        names.is_empty() || has_signature(&trash)
    };
    if !own {
        return Err(InputError::Invalid(format!(
            "--db '{}' has a '{TRASH}' that kvperf did not make; kvperf will not use this directory",
            dir.display()
        ))
        .into());
    }
    Ok(true)
}

fn has_signature(trash: &Path) -> bool {
    let path = trash.join(SIGNATURE_FILE);
    fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && m.len() < 256)
        && fs::read(&path).is_ok_and(|b| b == signature().as_bytes())
}

/// Empties the store of `engine` in `dir`: every entry `owns` claims but
/// those in `keep`. `while_flagged` runs once the trash stands and before
/// any file moves (the ledger is emptied then, so no kill leaves it
/// listing keys of an emptied store). Refused, with nothing removed, if
/// an entry to remove is not of a kind the engine makes ([`foreign`]).
pub fn empty(
    dir: &Path,
    engine: &str,
    (owns, dirs): (fn(&str) -> bool, Option<EngineDirs>),
    keep: &[&str],
    while_flagged: impl FnOnce() -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let trash = dir.join(TRASH);
    let was_interrupted = interrupted(dir)?;
    if let Some((path, what)) = foreign(dir, owns, dirs, keep)? {
        return Err(InputError::Invalid(format!(
            "--db '{}' holds '{}', {what} where {engine} keeps its own files, not one {engine} makes: kvperf empties a store (`load --fresh`) of the engine's own files only, and removed nothing; move it out of --db",
            dir.display(),
            path.display()
        ))
        .into());
    }
    if was_interrupted {
        // What an interrupted emptying moved goes first: names never clash.
        delete_contents(&trash)?;
    } else {
        make_trash(dir)?;
    }
    while_flagged()?;
    for name in names(dir)? {
        if keep.contains(&name.as_str()) || name == TRASH || !owns(&name) {
            continue;
        }
        fs::rename(dir.join(&name), trash.join(&name)).with_context(|| {
            format!(
                "cannot move '{}' out of the store",
                dir.join(&name).display()
            )
        })?;
    }
    delete_contents(&trash)?;
    remove(&trash.join(SIGNATURE_FILE))?;
    fs::remove_dir(&trash).with_context(|| format!("cannot remove '{}'", trash.display()))?;
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("cannot sync '{}'", dir.display()))
}

/// The first entry among those `empty` would remove that the engine does
/// not make, and what it is. Regular files go, and links by their name
/// (never followed: the file a link names, or a hard link's other names,
/// stay); a directory goes only where the engine makes one (`dirs`) and
/// only if all it holds, at any depth, is named as the engine names its
/// files. A user's directory at `data.mdb` went with what it held.
fn foreign(
    dir: &Path,
    owns: fn(&str) -> bool,
    dirs: Option<EngineDirs>,
    keep: &[&str],
) -> anyhow::Result<Option<(PathBuf, String)>> {
    // (path, whether the engine makes a directory there)
    let mut pending: Vec<(PathBuf, bool)> = names(dir)?
        .into_iter()
        .filter(|name| owns(name) && name != TRASH && !keep.contains(&name.as_str()))
        .map(|name| {
            let made = dirs.is_some_and(|d| d.at.contains(&name.as_str()));
            (dir.join(name), made)
        })
        .collect();
    while let Some((path, made)) = pending.pop() {
        let kind = match fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot read '{}'", path.display())),
            Ok(meta) => meta.file_type(),
        };
        if kind.is_file() || kind.is_symlink() {
            continue;
        }
        if let (true, true, Some(dirs)) = (kind.is_dir(), made, dirs) {
            for name in names(&path)? {
                if !(dirs.holds)(&name) {
                    return Ok(Some((path.join(name), "an entry in a directory".into())));
                }
                pending.push((path.join(name), true));
            }
            continue;
        }
        let what = format!("{} at a name", crate::files::kind_of(kind));
        return Ok(Some((path, what)));
    }
    Ok(None)
}

/// Makes the trash with its signature under a temporary name, then
/// renames it into place (never over anything), durably.
fn make_trash(dir: &Path) -> anyhow::Result<()> {
    let tmp = owned::temporary_name(dir, TRASH);
    let made = (|| {
        fs::create_dir(&tmp)?;
        owned::write_atomically(
            &tmp,
            SIGNATURE_FILE,
            signature().as_bytes(),
            owned::Place::New,
        )?;
        owned::rename_noreplace(&tmp, &dir.join(TRASH))?;
        fs::File::open(dir)?.sync_all()
    })();
    if made.is_err() {
        let _ = fs::remove_file(tmp.join(SIGNATURE_FILE));
        let _ = fs::remove_dir(&tmp);
    }
    made.with_context(|| format!("cannot make '{}' in --db '{}'", TRASH, dir.display()))
}

/// Deletes what the trash holds but its signature.
fn delete_contents(trash: &Path) -> anyhow::Result<()> {
    for name in names(trash)? {
        if name != SIGNATURE_FILE {
            remove(&trash.join(name))?;
        }
    }
    Ok(())
}

fn remove(path: &Path) -> anyhow::Result<()> {
    let removed = match fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(path),
        _ => fs::remove_file(path),
    };
    removed.with_context(|| format!("cannot remove '{}'", path.display()))
}

fn names(dir: &Path) -> anyhow::Result<Vec<String>> {
    Ok(fs::read_dir(dir)
        .with_context(|| format!("cannot list '{}'", dir.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect())
}
