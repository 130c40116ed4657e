//! I/O accounting against a known write: N bytes written with fsync into a
//! directory on a block device show up as at least N device bytes.

use std::io::Write;

use kvperf::host::disk_usage::size_on_disk;
use kvperf::host::HostInfo;
use kvperf::measure::accounting::{LogicalBytes, Probe};

#[test]
fn a_synced_write_of_n_bytes_is_at_least_n_device_bytes() {
    // The target directory is on a disk (tempdirs may be on tmpfs).
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let host = HostInfo::collect(Some(dir.path()));
    let device = host.block_device().map(str::to_string);
    let probe = Probe {
        device: device.clone(),
        ..Probe::default()
    };
    const N: u64 = 8 << 20;
    let before = probe.take();
    let mut file = std::fs::File::create(dir.path().join("known")).unwrap();
    // Incompressible, so no layer can shrink it.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let data: Vec<u8> = (0..N)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    file.write_all(&data).unwrap();
    file.sync_all().unwrap();
    let logical = LogicalBytes {
        read: 0,
        written: N,
        dataset: N,
        whole_records_written: None,
    };
    let size = size_on_disk(dir.path()).map_err(|e| e.to_string());
    let a = before.until(&probe.take(), 1, logical, size);
    let dev = a.device_io.unwrap_or_else(|| {
        panic!(
            "{} should be on a block device: {:?}",
            dir.path().display(),
            a.unavailable
        )
    });
    assert!(
        dev.write_bytes >= N,
        "device wrote {} < {N}",
        dev.write_bytes
    );
    assert!(dev.write_ios >= 1);
    assert!(a.process_io.unwrap().wchar >= N);
    // Both amplifications are of the same N logical bytes: this process's
    // block-layer bytes and the device's (every process's) sectors.
    assert!(a.derived.write_amplification_process.unwrap() >= 1.0);
    assert!(a.derived.write_amplification_device.unwrap() >= 1.0);
    assert!(!a.derived.write_amplification_device_unreliable);
    assert!(a.data_dir_bytes.unwrap() >= N);
    assert!(a.derived.space_amplification.unwrap() >= 1.0);
    assert_eq!(a.device, device, "the data directory's device");
    assert!(
        a.unavailable.iter().all(|u| !u.starts_with("device")),
        "{:?}",
        a.unavailable
    );
}
