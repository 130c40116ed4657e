//! The dynamic symbols of an ELF64 little-endian file (x86-64, aarch64):
//! which functions a shared library exports and which an executable
//! imports, so kvperf can tell before a run whether a RocksDB library has
//! every C function kvperf calls. Reads only the section headers and the
//! `.dynsym`/`.dynstr` sections, never the whole file.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use anyhow::{bail, Context};

const SHT_DYNSYM: u32 = 11;
const SHN_UNDEF: u16 = 0;
const STT_FUNC: u8 = 2;
const STB_GLOBAL: u8 = 1;
const STB_WEAK: u8 = 2;
/// Larger sections than this are not a symbol table kvperf reads.
const MOST_SECTION_BYTES: u64 = 256 << 20;

/// One dynamic symbol: its name and whether the file defines it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynamicSymbol {
    pub name: String,
    pub defined: bool,
    pub function: bool,
    pub global: bool,
}

/// The dynamic symbols of the ELF file at `path`.
pub fn dynamic_symbols(path: &Path) -> anyhow::Result<Vec<DynamicSymbol>> {
    let file = File::open(path).with_context(|| format!("cannot open '{}'", path.display()))?;
    let what = || {
        format!(
            "'{}' is not an ELF64 little-endian file kvperf can read",
            path.display()
        )
    };
    let mut header = [0u8; 64];
    file.read_exact_at(&mut header, 0).with_context(what)?;
    if &header[..4] != b"\x7fELF" || header[4] != 2 || header[5] != 1 {
        bail!(what());
    }
    let u16_at = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]);
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let section_offset = u64_at(&header, 0x28);
    let entry_size = u16_at(&header, 0x3A) as u64;
    let count = u16_at(&header, 0x3C) as u64;
    if entry_size < 64 || count == 0 {
        bail!(what());
    }
    let read = |offset: u64, size: u64| -> anyhow::Result<Vec<u8>> {
        if size > MOST_SECTION_BYTES {
            bail!(what());
        }
        let mut bytes = vec![0u8; size as usize];
        file.read_exact_at(&mut bytes, offset).with_context(what)?;
        Ok(bytes)
    };
    let sections = read(section_offset, entry_size * count)?;
    let section = |i: u64| &sections[(i * entry_size) as usize..((i + 1) * entry_size) as usize];
    let Some(dynsym) = (0..count).map(section).find(|s| u32_at(s, 4) == SHT_DYNSYM) else {
        return Ok(Vec::new()); // statically linked: no dynamic symbols
    };
    let strings_index = u32_at(dynsym, 40) as u64;
    if strings_index >= count {
        bail!(what());
    }
    let strings_section = section(strings_index);
    let strings = read(u64_at(strings_section, 24), u64_at(strings_section, 32))?;
    let symbols = read(u64_at(dynsym, 24), u64_at(dynsym, 32))?;
    let mut found = Vec::with_capacity(symbols.len() / 24);
    for symbol in symbols.chunks_exact(24) {
        let name_at = u32_at(symbol, 0) as usize;
        let Some(tail) = strings.get(name_at..) else {
            bail!(what())
        };
        let end = tail.iter().position(|b| *b == 0).unwrap_or(tail.len());
        if end == 0 {
            continue;
        }
        let info = symbol[4];
        found.push(DynamicSymbol {
            name: String::from_utf8_lossy(&tail[..end]).into_owned(),
            defined: u16_at(symbol, 6) != SHN_UNDEF,
            function: info & 0xf == STT_FUNC,
            global: matches!(info >> 4, STB_GLOBAL | STB_WEAK),
        });
    }
    Ok(found)
}

/// The functions whose names start with `prefix` that `path` exports.
pub fn exported_functions(path: &Path, prefix: &str) -> anyhow::Result<Vec<String>> {
    let mut names: Vec<String> = dynamic_symbols(path)?
        .into_iter()
        .filter(|s| s.defined && s.function && s.global && s.name.starts_with(prefix))
        .map(|s| s.name)
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

/// The symbols whose names start with `prefix` that `path` needs from a
/// shared library (undefined in it).
pub fn imported_symbols(path: &Path, prefix: &str) -> anyhow::Result<Vec<String>> {
    let mut names: Vec<String> = dynamic_symbols(path)?
        .into_iter()
        .filter(|s| !s.defined && s.name.starts_with(prefix))
        .map(|s| s.name)
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libc_exports_malloc_and_this_test_imports_it() {
        let exe = std::env::current_exe().unwrap();
        let imports = imported_symbols(&exe, "").unwrap();
        assert!(imports.iter().any(|n| n == "malloc"), "{imports:?}");
        let libc = [
            "/lib/x86_64-linux-gnu/libc.so.6",
            "/lib/aarch64-linux-gnu/libc.so.6",
        ]
        .into_iter()
        .map(Path::new)
        .find(|p| p.exists());
        let Some(libc) = libc else {
            eprintln!("skip: no libc.so.6 at Debian's paths");
            return;
        };
        let exports = exported_functions(libc, "mall").unwrap();
        assert!(exports.iter().any(|n| n == "malloc"), "{exports:?}");
        assert!(!exports.iter().any(|n| n == "free"));
    }

    #[test]
    fn a_file_that_is_not_elf_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("not-elf");
        std::fs::write(&path, vec![b'x'; 128]).unwrap();
        let err = dynamic_symbols(&path).unwrap_err().to_string();
        assert!(err.contains("is not an ELF64"), "{err}");
    }
}
