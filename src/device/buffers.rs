//! The memory `kvperf device` reads into and writes from. A direct I/O
//! goes to the device as one segment per physically contiguous run of its
//! buffer: 32 segments for a 128 KiB block on scattered 4 KiB pages, one
//! on a huge page. Devices that pay per segment (virtio disks, PRP lists)
//! then run the same sequential job 1.5-4x apart depending on how the
//! kernel happened to place the tool's pages (bench/RESULTS.md, section
//! 5, 2026-11-27). So the buffers ask for 2 MiB transparent huge pages by
//! default, and say how many bytes actually got them.

use rand::{RngCore, SeedableRng};

use crate::host::proc_number;

/// Alignment of a mapping that can be backed by 2 MiB pages.
const HUGE: usize = 2 << 20;

/// Which pages the I/O buffers ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum BufferPages {
    /// 2 MiB transparent huge pages (madvise), one segment per block.
    #[default]
    Huge,
    /// 4 KiB pages wherever the kernel puts them, as fio's default
    /// `iomem=malloc` gets them.
    Small,
}

impl BufferPages {
    pub fn name(self) -> &'static str {
        match self {
            BufferPages::Huge => "huge",
            BufferPages::Small => "small",
        }
    }
}

/// One anonymous mapping, 2 MiB aligned, filled with incompressible bytes,
/// unmapped on drop.
pub struct Buffers {
    map: *mut libc::c_void,
    map_len: usize,
    /// The aligned start of the buffers inside the mapping.
    pub ptr: *mut u8,
    pub len: usize,
    /// Bytes of `len` the kernel backed with huge pages.
    pub huge_bytes: u64,
}

impl Buffers {
    pub fn new(len: usize, pages: BufferPages, seed: u64) -> std::io::Result<Self> {
        let len = len.max(4096).next_multiple_of(HUGE);
        let map_len = len + HUGE;
        // SAFETY: an anonymous private mapping of a non-zero length.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let offset = (map as usize).next_multiple_of(HUGE) - map as usize;
        // SAFETY: offset < HUGE, so [ptr, ptr + len) is inside the mapping.
        let ptr = unsafe { (map as *mut u8).add(offset) };
        let advice = match pages {
            BufferPages::Huge => libc::MADV_HUGEPAGE,
            BufferPages::Small => libc::MADV_NOHUGEPAGE,
        };
        // Before the first touch, so the faults below already follow it.
        // A kernel without THP refuses it; `huge_bytes` then says 0.
        // SAFETY: the range is inside the mapping and page aligned.
        unsafe { libc::madvise(ptr.cast(), len, advice) };
        // Incompressible data, so no layer below can shrink the writes.
        // SAFETY: ptr is valid for len bytes of the mapping.
        let bytes = unsafe { std::slice::from_raw_parts_mut(ptr, len) };
        rand::rngs::SmallRng::seed_from_u64(seed).fill_bytes(bytes);
        let huge_bytes = std::fs::read_to_string("/proc/self/smaps")
            .map(|smaps| anon_huge_bytes(&smaps, ptr as usize))
            .unwrap_or(0)
            .min(len as u64);
        Ok(Self {
            map,
            map_len,
            ptr,
            len,
            huge_bytes,
        })
    }
}

impl Drop for Buffers {
    fn drop(&mut self) {
        // SAFETY: mapped in `new` with this length.
        unsafe { libc::munmap(self.map, self.map_len) };
    }
}

/// `AnonHugePages` of the mapping in `smaps` that holds `addr`, in bytes.
fn anon_huge_bytes(smaps: &str, addr: usize) -> u64 {
    let mut inside = false;
    for line in smaps.lines() {
        if let Some((range, _)) = line.split_once(' ') {
            if let Some((start, end)) = range.split_once('-') {
                if let (Ok(start), Ok(end)) = (
                    usize::from_str_radix(start, 16),
                    usize::from_str_radix(end, 16),
                ) {
                    inside = (start..end).contains(&addr);
                    continue;
                }
            }
        }
        if inside && line.starts_with("AnonHugePages:") {
            return proc_number(line, "AnonHugePages:").map_or(0, |kb| kb * 1024);
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smaps_is_read_for_the_mapping_that_holds_the_address() {
        let smaps = "\
7f0000000000-7f0000400000 rw-p 00000000 00:00 0
Size:               4096 kB
AnonHugePages:      2048 kB
7f0000600000-7f0000e00000 rw-p 00000000 00:00 0 
Size:               8192 kB
AnonHugePages:      6144 kB
";
        assert_eq!(anon_huge_bytes(smaps, 0x7f00_0000_1000), 2 << 20);
        assert_eq!(anon_huge_bytes(smaps, 0x7f00_0060_0000), 6 << 20);
        assert_eq!(anon_huge_bytes(smaps, 0x7f00_0050_0000), 0, "in no mapping");
    }

    #[test]
    fn buffers_are_aligned_filled_and_report_their_huge_pages() {
        for pages in [BufferPages::Huge, BufferPages::Small] {
            let b = Buffers::new(4 << 20, pages, 7).unwrap();
            assert_eq!(b.ptr as usize % HUGE, 0);
            assert_eq!(b.len, 4 << 20);
            // SAFETY: len bytes from ptr are the filled buffers.
            let bytes = unsafe { std::slice::from_raw_parts(b.ptr, b.len) };
            assert!(bytes.iter().filter(|&&x| x == 0).count() < b.len / 128);
            assert!(b.huge_bytes <= b.len as u64);
            if pages == BufferPages::Small {
                assert_eq!(b.huge_bytes, 0, "MADV_NOHUGEPAGE keeps 4 KiB pages");
            }
        }
    }
}
