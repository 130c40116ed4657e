//! What a directory takes on its device, as `du` counts it: the numerator
//! of space amplification, for engines (their files) and servers alike.

use std::path::Path;

/// Allocated bytes of every file under `dir` (what `du` counts), without
/// following symbolic links.
pub fn size_on_disk(dir: &Path) -> std::io::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(path) = pending.pop() {
        let meta = std::fs::symlink_metadata(&path)?;
        total += meta.blocks() * 512;
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path)? {
                pending.push(entry?.path());
            }
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn size_on_disk_counts_allocated_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = std::fs::File::create(dir.path().join("data")).unwrap();
        f.write_all(&vec![1u8; 256 * 1024]).unwrap();
        f.sync_all().unwrap();
        assert!(size_on_disk(dir.path()).unwrap() >= 256 * 1024);
    }
}
