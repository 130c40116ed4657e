//! `kvperf device corners` on a file of this machine, fio beside it where
//! installed, and every safety refusal: existing files, unconfirmed or
//! mounted block devices (a loop device, when root may make one).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{assert_input_error, kvperf};
use kvperf::results::StepOutput;

/// A directory on a real filesystem (direct I/O fails on tmpfs).
fn disk_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// `device corners TARGET` of `size`, `runtime` seconds each, no ramp.
pub(crate) fn corners_args(
    target: &Path,
    size: &str,
    runtime: &str,
    extra: &[&str],
) -> Vec<String> {
    let target = target.display().to_string();
    let mut args = vec!["device", "corners", &target, "--size", size];
    args.extend(["--runtime", runtime, "--ramp", "0"]);
    args.extend_from_slice(extra);
    args.into_iter().map(String::from).collect()
}

fn corners(dir: &Path, target: &Path, extra: &[&str]) -> common::Output {
    let args = corners_args(target, "8MiB", "1", extra);
    kvperf(dir, &args.iter().map(String::as_str).collect::<Vec<_>>())
}

fn has(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Checks the 4 corners' figures in a `--format json` result.
fn assert_four_corners(out: &StepOutput, with_fio: bool) {
    let names: Vec<_> = out.measurements.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["read", "randread", "write", "randwrite"]);
    for m in &out.measurements {
        let d = m.device.as_ref().expect("device figures");
        assert_eq!(d.block_bytes, if d.random { 4096 } else { 128 << 10 });
        assert_eq!(d.queue_depth, 32);
        assert_eq!(d.write, m.name.contains("write"), "{}", m.name);
        assert!(m.ops_per_sec > 0.0 && d.mb_per_sec > 0.0, "{}", m.name);
        // MB/s is IOPS times the block size, in fio's 10^6 bytes.
        let implied = m.ops_per_sec * d.block_bytes as f64 / 1e6;
        assert!((implied / d.mb_per_sec - 1.0).abs() < 0.01, "{}", m.name);
        let ops = m.ops.values().next().expect("one operation type");
        assert!(ops.latency.count > 0 && ops.latency.p99_us >= ops.latency.avg_us);
        // The buffers are said: huge pages asked (the default), and how
        // many bytes of block x depth the kernel gave them.
        let b = d.buffers.as_ref().expect("the I/O buffers are recorded");
        assert_eq!(b.pages, "huge");
        assert_eq!(b.bytes, d.block_bytes * d.queue_depth);
        assert!(b.huge_page_bytes <= b.bytes, "{b:?}");
        match &d.fio {
            Some(f) => assert!(
                with_fio
                    && f.iops > 0.0
                    && f.mb_per_sec > 0.0
                    && ["shmhuge", "malloc"].contains(&f.iomem.as_str())
            ),
            None => assert!(!with_fio, "fio's figures are missing for {}", m.name),
        }
    }
}

#[test]
fn corners_of_a_file_are_measured_and_only_kvperfs_file_is_removed() {
    let tmp = disk_dir();
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("notes.txt"), "the user's").unwrap();
    let with_fio = has("fio");
    if !with_fio {
        eprintln!("fio is not installed: kvperf's corners are checked without fio's beside them");
    }
    let json = tmp.path().join("corners.json");
    let json_arg = json.display().to_string();
    let mut extra = vec!["--format", "json", "--output", &json_arg];
    if with_fio {
        extra.push("--with-fio");
    }
    let out = corners(tmp.path(), &data, &extra);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let result: StepOutput = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(result.command, "corners");
    assert_eq!(result.settings["size"], (8u64 << 20).to_string());
    assert_four_corners(&result, with_fio);
    let left: Vec<_> = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        left,
        ["notes.txt"],
        "the test file is gone, the user's file is not"
    );

    // A new file name works too; the text table names each corner.
    let file = tmp.path().join("new.dat");
    let out = corners(
        tmp.path(),
        &file,
        &["--rand-depth", "8", "--io-buffers", "small"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("I/O buffers: kvperf's on 4 KiB pages."),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("| randread | 4 KiB | 8 |"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("| write | 128 KiB | 32 |"),
        "{}",
        out.stdout
    );
    assert!(!file.exists(), "kvperf removes the file it created");
}

#[test]
fn what_corners_must_not_touch_is_refused_in_one_line() {
    let tmp = disk_dir();
    let mine = tmp.path().join("thesis.pdf");
    std::fs::write(&mine, "precious").unwrap();
    assert_input_error(&corners(tmp.path(), &mine, &[]), "will not overwrite");
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "precious");
    let mine_arg = mine.display().to_string();
    assert_input_error(
        &corners(tmp.path(), tmp.path(), &["--destroy-data-on", &mine_arg]),
        "is for a block device",
    );
    let huge = kvperf(
        tmp.path(),
        &[
            "device",
            "corners",
            ".",
            "--size",
            "4000TiB",
            "--runtime",
            "1",
        ],
    );
    assert_input_error(&huge, "give a smaller --size");
    let bad = kvperf(
        tmp.path(),
        &["device", "corners", ".", "--size", "8 parsecs"],
    );
    assert_input_error(&bad, "--size");
    let pages = kvperf(
        tmp.path(),
        &["device", "corners", ".", "--io-buffers", "tiny"],
    );
    assert_input_error(&pages, "--io-buffers");
    assert!(
        std::fs::read_dir(tmp.path()).unwrap().count() == 1,
        "nothing was created"
    );

    // A block device is refused unless named again, in full, as the one to destroy.
    let Some(device) = any_block_device() else {
        eprintln!("skipped the block-device refusals: no block device under /dev");
        return;
    };
    let other = tmp.path().display().to_string();
    for extra in [vec![], vec!["--destroy-data-on", other.as_str()]] {
        let out = corners(tmp.path(), &device, &extra);
        assert_input_error(&out, "give --destroy-data-on");
    }
}

/// The first block device listed by the kernel (read-only use: refusals).
fn any_block_device() -> Option<PathBuf> {
    std::fs::read_dir("/sys/class/block")
        .ok()?
        .flatten()
        .map(|e| Path::new("/dev").join(e.file_name()))
        .find(|p| p.exists())
}

/// A loop device over a file, detached (and unmounted) when dropped.
struct LoopDevice {
    device: PathBuf,
    mount: Option<PathBuf>,
}

impl LoopDevice {
    fn attach(backing: &Path) -> Option<Self> {
        let out = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(backing)
            .output()
            .ok()?;
        let device = String::from_utf8(out.stdout).ok()?.trim().to_string();
        (out.status.success() && !device.is_empty()).then(|| LoopDevice {
            device: device.into(),
            mount: None,
        })
    }

    fn mount_on(&mut self, dir: &Path) -> bool {
        let ok = |c: &mut Command| c.output().is_ok_and(|o| o.status.success());
        let made = ok(Command::new("mkfs.ext4").arg("-q").arg(&self.device))
            && ok(Command::new("mount").arg(&self.device).arg(dir));
        if made {
            self.mount = Some(dir.to_path_buf());
        }
        made
    }

    fn unmount(&mut self) {
        if let Some(dir) = self.mount.take() {
            let status = Command::new("umount").arg(&dir).status().unwrap();
            assert!(status.success(), "umount {}", dir.display());
        }
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        if let Some(dir) = self.mount.take() {
            let _ = Command::new("umount").arg(dir).status();
        }
        let _ = Command::new("losetup").arg("-d").arg(&self.device).status();
    }
}

#[test]
fn a_raw_device_is_refused_while_mounted_and_measured_once_confirmed() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !has("losetup") {
        eprintln!("skipped: making a loop device needs root and losetup");
        return;
    }
    let tmp = disk_dir();
    let backing = tmp.path().join("disk.img");
    std::fs::File::create(&backing)
        .unwrap()
        .set_len(32 << 20)
        .unwrap();
    let Some(mut dev) = LoopDevice::attach(&backing) else {
        eprintln!("skipped: losetup could not attach a loop device here");
        return;
    };
    let device = dev.device.display().to_string();
    let confirm = ["--destroy-data-on", device.as_str()];
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    if dev.mount_on(&mnt) {
        std::fs::write(mnt.join("keep.txt"), "mounted data").unwrap();
        let out = corners(tmp.path(), &dev.device, &confirm);
        assert_input_error(&out, "is mounted on");
        assert_eq!(
            std::fs::read_to_string(mnt.join("keep.txt")).unwrap(),
            "mounted data"
        );
        dev.unmount();
    } else {
        eprintln!("could not format and mount the loop device: its mounted refusal is not checked");
    }
    let json = tmp.path().join("raw.json");
    let json_arg = json.display().to_string();
    let mut args = confirm.to_vec();
    args.extend(["--format", "json", "--output", &json_arg]);
    let out = corners(tmp.path(), &dev.device, &args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let result: StepOutput = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_four_corners(&result, false);
    assert!(backing.exists(), "the device's backing file is left alone");
}
