//! RocksDB options from an options string (`rocksdb.options`,
//! "delayed_write_rate=8388608;enable_pipelined_write=true").
//!
//! RocksDB's C API parses one (`rocksdb_get_options_from_string`), but the
//! `rocksdb` crate 0.24 — the last whose bundled headers are RocksDB 10.4.2,
//! the release kvperf links — has no method for it and no way to wrap a raw
//! `rocksdb_options_t`. So the parsed options replace the pointer a default
//! `rocksdb::Options` holds: found as the word that, in each of a few
//! `Options` given distinct max_open_files through the crate, points at
//! memory holding that value, and checked through the C API before
//! anything is swapped.

use std::ffi::{CStr, CString};
use std::mem::size_of;

use librocksdb_sys as ffi;
use rocksdb::Options;

/// RocksDB's defaults with `text` applied, as a `rocksdb::Options`.
pub fn options_from_string(text: &str) -> Result<Options, String> {
    let text =
        CString::new(text).map_err(|_| "an options string cannot hold a NUL byte".to_string())?;
    let parsed = parse(&text)?;
    match replace_inner(parsed) {
        Ok(options) => Ok(options),
        Err(why) => {
            // SAFETY: `parsed` was created above and not handed out.
            unsafe { ffi::rocksdb_options_destroy(parsed) };
            Err(why)
        }
    }
}

/// RocksDB's defaults with `text` applied, as a new C options object.
fn parse(text: &CStr) -> Result<*mut ffi::rocksdb_options_t, String> {
    // SAFETY: plain C API calls on objects created here; the error string is
    // RocksDB's (malloc'd), freed after it is copied.
    unsafe {
        let base = ffi::rocksdb_options_create();
        let parsed = ffi::rocksdb_options_create();
        let mut error: *mut libc::c_char = std::ptr::null_mut();
        ffi::rocksdb_get_options_from_string(base, text.as_ptr(), parsed, &mut error);
        ffi::rocksdb_options_destroy(base);
        if error.is_null() {
            return Ok(parsed);
        }
        let why = CStr::from_ptr(error).to_string_lossy().into_owned();
        ffi::rocksdb_free(error.cast());
        ffi::rocksdb_options_destroy(parsed);
        Err(why)
    }
}

/// A default `rocksdb::Options` whose C object is `parsed` (owned from
/// then on by the returned value).
fn replace_inner(parsed: *mut ffi::rocksdb_options_t) -> Result<Options, String> {
    let mut samples: Vec<Options> = (0..SAMPLES).map(marked).collect();
    let at = inner_word(&samples).ok_or_else(|| {
        "this build's rocksdb crate keeps its options where kvperf cannot find them for an options string; \
         set the options kvperf names (`kvperf engines`) instead"
            .to_string()
    })?;
    let mut options = samples.swap_remove(0);
    let slot = (&mut options as *mut Options).cast::<u8>();
    // SAFETY: `at` is the offset of the word that points at each sample's
    // C object (`inner_word`), whose max_open_files the C API reads back.
    unsafe {
        let current = slot.add(at).cast::<usize>().read_unaligned() as *mut ffi::rocksdb_options_t;
        if ffi::rocksdb_options_get_max_open_files(current) != mark(0) {
            return Err("the rocksdb crate's options object is not where kvperf found it".into());
        }
        // `parsed` replaces it; `options` destroys it when dropped, as it
        // would have destroyed `current`.
        ffi::rocksdb_options_destroy(current);
        slot.add(at)
            .cast::<usize>()
            .write_unaligned(parsed as usize);
    }
    Ok(options)
}

/// How many default `Options` are compared to find the C object's word.
const SAMPLES: usize = 4;

/// A value no option is set to by chance, one per sample.
fn mark(sample: usize) -> i32 {
    0x3A5C_7E11 + sample as i32
}

fn marked(sample: usize) -> Options {
    let mut options = Options::default();
    options.set_max_open_files(mark(sample));
    options
}

/// The byte offset, in every sample, of the word that points at a memory
/// block holding that sample's mark: the crate's pointer to its C options
/// object. The samples' bytes and the pointed-at memory are read through
/// the kernel (`process_vm_readv` on this process), which copies what is
/// there, padding included, and fails on an address that is not mapped
/// instead of faulting.
fn inner_word(samples: &[Options]) -> Option<usize> {
    const WORD: usize = size_of::<usize>();
    let images: Vec<Vec<u8>> = samples
        .iter()
        .map(|o| {
            let mut bytes = vec![0u8; size_of::<Options>()];
            let read = read_own_memory((o as *const Options) as usize, &mut bytes);
            (read == bytes.len()).then_some(bytes)
        })
        .collect::<Option<_>>()?;
    (0..=size_of::<Options>().saturating_sub(WORD))
        .step_by(WORD)
        .find(|&at| {
            images.iter().enumerate().all(|(sample, image)| {
                let address = usize::from_ne_bytes(image[at..at + WORD].try_into().unwrap());
                points_at_mark(address, mark(sample))
            })
        })
}

/// Whether the 4 KiB from `address` (as much as is mapped) hold `mark`.
fn points_at_mark(address: usize, mark: i32) -> bool {
    if address < 4096 || !address.is_multiple_of(size_of::<usize>()) {
        return false;
    }
    let mut bytes = [0u8; 4096];
    let read = read_own_memory(address, &mut bytes);
    bytes[..read]
        .chunks_exact(4)
        .any(|chunk| chunk == mark.to_ne_bytes())
}

/// Copies `buf.len()` bytes from `address` in this process; how many were
/// readable (0 where nothing is mapped).
fn read_own_memory(address: usize, buf: &mut [u8]) -> usize {
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        iov_base: address as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: the kernel writes only into `buf` and reads `address` as
    // another process's memory would be read: an unmapped page is EFAULT.
    let read = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    usize::try_from(read).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_sets_db_and_column_family_options() {
        let mut options =
            options_from_string("max_open_files=77;write_buffer_size=1048576;num_levels=4")
                .unwrap();
        // The crate's setters still reach the same object.
        options.set_max_background_jobs(3);
        let dir = tempfile::tempdir().unwrap();
        options.create_if_missing(true);
        drop(rocksdb::DB::open(&options, dir.path()).unwrap());
        let file = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("OPTIONS-")
            })
            .unwrap();
        let text = std::fs::read_to_string(file).unwrap();
        for line in [
            "max_open_files=77",
            "write_buffer_size=1048576",
            "num_levels=4",
            "max_background_jobs=3",
        ] {
            assert!(text.lines().any(|l| l.trim() == line), "{line} missing");
        }
    }

    #[test]
    fn a_bad_string_is_rocksdbs_error() {
        let Err(err) = options_from_string("no_such_option=1") else {
            panic!("an unknown option was accepted")
        };
        assert!(err.contains("no_such_option"), "{err}");
        assert!(options_from_string("a\0b").is_err());
    }
}
