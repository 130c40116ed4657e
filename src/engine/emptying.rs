//! Emptying a directory engine's store (`--fresh`) so that a kill at any
//! moment leaves a store kvperf knows is incomplete: first a trash
//! directory of kvperf's own appears, atomically and carrying kvperf's
//! signature; then the engine's files move into it; then it is deleted,
//! last of all. While it stands, the store is incomplete: a run refuses
//! it in one line and the next `--fresh` finishes the emptying. (Deleting
//! in directory order left RocksDB's CURRENT without its MANIFEST.)

use std::fs;
use std::path::Path;

use anyhow::Context;

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

/// Empties the store in `dir`: every entry `owns` claims but those in
/// `keep`. `while_flagged` runs once the trash stands and before any file
/// moves (the ledger is emptied then, so no kill leaves it listing keys
/// of an emptied store).
pub fn empty(
    dir: &Path,
    owns: fn(&str) -> bool,
    keep: &[&str],
    while_flagged: impl FnOnce() -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let trash = dir.join(TRASH);
    if interrupted(dir)? {
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
