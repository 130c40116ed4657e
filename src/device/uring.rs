//! The I/O loop of `kvperf device`: one file or device, direct I/O through
//! io_uring at a fixed queue depth, as fio's `ioengine=io_uring
//! direct=1 iodepth=N` does. Each slot has its own aligned buffer; a
//! completion is timed from its submission and the slot resubmitted at
//! once, so the queue stays full.
//!
//! Each I/O enters the kernel on its own the moment its slot is free, as
//! fio's io_uring engine does with its default `iodepth_batch_submit=1`:
//! resubmitting a reaped batch together (one `io_uring_enter` for all)
//! ran 4 KiB random reads at QD 32 at 0.72x of fio on a virtio disk,
//! submitting each at once at 1.05x (bench/RESULTS.md, section 5).

use std::fs::File;
use std::os::unix::io::AsRawFd;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use io_uring::{opcode, types, IoUring};
use rand::{Rng, SeedableRng};

use super::buffers::{BufferPages, Buffers};
use crate::results::step::IoBuffers;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pattern {
    pub write: bool,
    pub random: bool,
    pub block: usize,
    pub depth: usize,
}

/// When the loop stops.
#[derive(Debug, Clone, Copy)]
pub enum Until {
    /// After `ramp` (not counted) and then `runtime` (counted).
    Time { ramp: Duration, runtime: Duration },
    /// After one pass over the whole file (a layout or preconditioning fill).
    OnePass,
}

#[derive(Debug, Clone)]
pub struct Done {
    pub ios: u64,
    pub bytes: u64,
    pub seconds: f64,
    /// Submission to completion, nanoseconds, of the counted I/Os.
    pub latency: Histogram<u64>,
    /// The I/O buffers: bytes, and how many of them are on huge pages.
    pub buffers: IoBuffers,
}

/// A ring set up as fio's io_uring engine sets up its own: one thread
/// submits and reaps, so completions' task work waits until it asks for
/// events (no interrupt per completion). Kernels before 6.1 refuse these
/// flags; the ring then falls back to the defaults.
fn new_ring(entries: u32) -> std::io::Result<IoUring> {
    IoUring::builder()
        .setup_cqsize(entries)
        .setup_coop_taskrun()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(entries)
        .or_else(|_| IoUring::new(entries))
}

/// Runs `pattern` on `file` (opened with O_DIRECT) over its first `size`
/// bytes, from buffers on `pages`.
pub fn run(
    file: &File,
    size: u64,
    pattern: Pattern,
    until: Until,
    pages: BufferPages,
    seed: u64,
) -> std::io::Result<Done> {
    let block = pattern.block as u64;
    let blocks = size / block;
    if blocks == 0 {
        return Err(std::io::Error::other(format!(
            "the target ({size} bytes) is smaller than one {block}-byte block"
        )));
    }
    let depth = pattern.depth.max(1);
    let mut ring = new_ring(depth.next_power_of_two() as u32)?;
    let buffer_bytes = pattern.block * depth;
    let buffers = Buffers::new(buffer_bytes, pages, seed)?;
    let fd = types::Fd(file.as_raw_fd());
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed ^ 0x9e37_79b9_7f4a_7c15);
    let mut next_block = 0u64;
    let mut issued_blocks = 0u64;
    let mut submitted_at = vec![Instant::now(); depth];
    let mut latency = crate::measure::new_histogram();

    let start = Instant::now();
    let (counted_from, stop_at) = match until {
        Until::Time { ramp, runtime } => (start + ramp, Some(start + ramp + runtime)),
        Until::OnePass => (start, None),
    };
    let mut done = Done {
        ios: 0,
        bytes: 0,
        seconds: 0.0,
        latency: latency.clone(),
        buffers: IoBuffers {
            pages: pages.name().to_string(),
            bytes: buffer_bytes as u64,
            // The mapping is whole 2 MiB pages; only block x depth is used.
            huge_page_bytes: buffers.huge_bytes.min(buffer_bytes as u64),
        },
    };

    // Next offset, or None when a one-pass run has issued the whole file.
    let mut next_offset = |rng: &mut rand::rngs::SmallRng| -> Option<u64> {
        if matches!(until, Until::OnePass) && issued_blocks >= blocks {
            return None;
        }
        issued_blocks += 1;
        let b = if pattern.random {
            rng.gen_range(0..blocks)
        } else {
            let b = next_block;
            next_block = (next_block + 1) % blocks;
            b
        };
        Some(b * block)
    };
    let submit = |ring: &mut IoUring, slot: usize, offset: u64| {
        submit_one(ring, (&buffers, fd), pattern, slot, offset)
    };

    let mut in_flight = 0usize;
    for (slot, at) in submitted_at.iter_mut().enumerate() {
        match next_offset(&mut rng) {
            Some(offset) => {
                *at = Instant::now();
                submit(&mut ring, slot, offset)?;
                in_flight += 1;
            }
            None => break,
        }
    }
    let mut completions = Vec::with_capacity(depth);
    while in_flight > 0 {
        // Nothing is queued here: this only waits for a completion. A
        // signal's handler (Ctrl-C) cuts the wait short: wait again.
        match ring.submit_and_wait(1) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            waited => waited?,
        };
        completions.clear();
        completions.extend(
            ring.completion()
                .map(|c| (c.user_data() as usize, c.result())),
        );
        let now = Instant::now();
        for &(slot, result) in &completions {
            in_flight -= 1;
            whole(result, pattern)?;
            let in_window = now >= counted_from && stop_at.is_none_or(|end| now < end);
            if in_window {
                done.ios += 1;
                done.bytes += block;
                let ns = now.duration_since(submitted_at[slot]).as_nanos() as u64;
                let _ = latency.record(ns.max(1));
            }
            // SIGINT, SIGTERM or SIGHUP (when the command catches them):
            // the I/Os in flight complete, none is queued.
            let stopping = stop_at.is_some_and(|end| now >= end) || crate::runner::interrupted();
            if !stopping {
                if let Some(offset) = next_offset(&mut rng) {
                    submitted_at[slot] = Instant::now();
                    submit(&mut ring, slot, offset)?;
                    in_flight += 1;
                }
            }
        }
    }
    if crate::runner::interrupted() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::Interrupted,
            "interrupted",
        ));
    }
    done.seconds = match until {
        Until::Time { runtime, .. } => runtime.as_secs_f64(),
        Until::OnePass => start.elapsed().as_secs_f64(),
    };
    done.latency = latency;
    Ok(done)
}

/// Queues one I/O of `pattern.block` bytes at `offset` from `slot`'s
/// buffer and enters the kernel with it.
fn submit_one(
    ring: &mut IoUring,
    (buffers, fd): (&Buffers, types::Fd),
    pattern: Pattern,
    slot: usize,
    offset: u64,
) -> std::io::Result<()> {
    // SAFETY: slot < depth, so the buffer range is inside the allocation.
    let buf = unsafe { buffers.ptr.add(slot * pattern.block) };
    let len = pattern.block as u32;
    let entry = if pattern.write {
        opcode::Write::new(fd, buf, len).offset(offset).build()
    } else {
        opcode::Read::new(fd, buf, len).offset(offset).build()
    };
    // SAFETY: the buffer outlives the I/O (it lives until `run`
    // returns, after every submitted I/O has completed).
    unsafe { ring.submission().push(&entry.user_data(slot as u64)) }
        .map_err(|_| std::io::Error::other("io_uring submission queue is full"))?;
    ring.submit().map(drop)
}

/// A completion's `result` as an error unless it moved the whole block.
fn whole(result: i32, pattern: Pattern) -> std::io::Result<()> {
    if result < 0 {
        return Err(std::io::Error::from_raw_os_error(-result));
    }
    if result as usize != pattern.block {
        return Err(std::io::Error::other(format!(
            "short {}: {result} of {} bytes",
            if pattern.write { "write" } else { "read" },
            pattern.block
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::OpenOptionsExt;

    fn direct_file(dir: &std::path::Path, size: u64) -> Option<File> {
        let path = dir.join("io.dat");
        std::fs::File::create(&path).unwrap().set_len(size).unwrap();
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(&path)
            .ok()
    }

    #[test]
    fn one_pass_writes_every_block_and_timed_runs_count_their_window() {
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let size = 8 << 20;
        let Some(file) = direct_file(dir.path(), size) else {
            panic!("O_DIRECT is not supported under {}", dir.path().display());
        };
        let write = Pattern {
            write: true,
            random: false,
            block: 128 << 10,
            depth: 8,
        };
        let pass = run(&file, size, write, Until::OnePass, BufferPages::Huge, 1).unwrap();
        assert_eq!(
            (pass.ios, pass.bytes),
            (64, size),
            "one pass = every block once"
        );
        let read = Pattern {
            write: false,
            random: true,
            block: 4096,
            depth: 4,
        };
        let timed = Until::Time {
            ramp: Duration::from_millis(100),
            runtime: Duration::from_millis(300),
        };
        let done = run(&file, size, read, timed, BufferPages::Small, 2).unwrap();
        assert!(done.ios > 0 && done.bytes == done.ios * 4096);
        assert_eq!(done.latency.len(), done.ios);
        assert!((done.seconds - 0.3).abs() < 1e-9);
    }
}
