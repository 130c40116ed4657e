//! What the drive itself counted: for a data directory on an NVMe
//! namespace, the controller's SMART / Health Information log (log page
//! 02h) and, where the drive has it, the OCP datacenter SMART log (C0h),
//! read through the Linux NVMe admin ioctl before and after a window.
//!
//! Data Units Written/Read count host data as the drive received it, in
//! units of 1,000 × 512 bytes (rounded up by the drive), 128-bit counters:
//! every process's writes, not only the engine's. Physical Media Units
//! Written (OCP) counts bytes written to the flash, the drive's own
//! garbage collection included: over the host's bytes it is the drive's
//! write amplification. On anything else (virtio, SATA, SCSI, tmpfs) the
//! figures are unavailable with the reason.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Bytes in one NVMe Data Unit: 1,000 units of 512 bytes.
pub const DATA_UNIT_BYTES: u128 = 512_000;
/// The Endurance Estimate's unit: one billion bytes.
const ENDURANCE_UNIT_BYTES: u128 = 1_000_000_000;
/// Identify Namespace data structure's size; ENDGID at bytes 103:102.
const IDENTIFY_BYTES: usize = 4096;
/// Size of the SMART / Health log and of OCP's C0h log.
const LOG_BYTES: usize = 512;
/// OCP's C0h log identifies itself with this GUID, bytes 496..512
/// (AFD514C97C6F4F9CA4F2BFEA2810AFC5, stored little-endian).
const OCP_C0_GUID: [u8; 16] = [
    0xC5, 0xAF, 0x10, 0x28, 0xEA, 0xBF, 0xF2, 0xA4, 0x9C, 0x4F, 0x6F, 0x7C, 0xC9, 0x14, 0xD5, 0xAF,
];

/// The counters of one reading of the drive's logs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DriveCounters {
    pub data_units_read: u128,
    pub data_units_written: u128,
    /// Percentage Used: the vendor's estimate of the life used (may pass 100).
    pub percentage_used: u8,
    /// OCP C0h Physical Media Units Written (bytes), when the drive has it.
    pub media_bytes_written: Option<u128>,
    /// The namespace's Endurance Group's Endurance Estimate (bytes), when
    /// the drive reports one: its rated lifetime writes.
    pub endurance_estimate_bytes: Option<u128>,
}

/// The SMART / Health Information log page (NVMe Base Specification 2.0,
/// Get Log Page, Log Identifier 02h): byte 5 Percentage Used, bytes 32..48
/// Data Units Read, 48..64 Data Units Written, little-endian.
pub fn parse_smart_log(page: &[u8]) -> Result<(u128, u128, u8), String> {
    if page.len() < LOG_BYTES {
        return Err(format!(
            "the SMART log is {} bytes, not {LOG_BYTES}",
            page.len()
        ));
    }
    Ok((le128(&page[32..48]), le128(&page[48..64]), page[5]))
}

/// OCP C0h (SMART / Health Information Extended): bytes 0..16 Physical
/// Media Units Written, in bytes; None when the page is not OCP's (its
/// GUID at bytes 496..512 differs: a vendor's own C0h page).
pub fn parse_ocp_c0(page: &[u8]) -> Option<u128> {
    (page.len() >= LOG_BYTES && page[496..512] == OCP_C0_GUID).then(|| le128(&page[0..16]))
}

/// The Endurance Group Information log (NVMe Base Specification 2.0, Log
/// Identifier 09h): Percentage Used at byte 5, Endurance Estimate at bytes
/// 47:32 in units of one billion bytes ("the total number of data bytes
/// that may be written ... over the lifetime ... assuming a write
/// amplification of 1"), as bytes; None when the page is short or the
/// drive leaves the estimate 0 (not reported).
pub fn parse_endurance_group_log(page: &[u8]) -> Option<u128> {
    let estimate = le128(page.get(32..48)?);
    (page.len() >= LOG_BYTES && estimate > 0).then(|| estimate.saturating_mul(ENDURANCE_UNIT_BYTES))
}

/// The Endurance Group Identifier (ENDGID, bytes 103:102) of an Identify
/// Namespace data structure; None for 0, a namespace in no group.
pub fn parse_endurance_group_id(identify: &[u8]) -> Option<u16> {
    let id = u16::from_le_bytes(identify.get(102..104)?.try_into().ok()?);
    (id != 0).then_some(id)
}

fn le128(bytes: &[u8]) -> u128 {
    let mut b = [0u8; 16];
    b.copy_from_slice(&bytes[..16]);
    u128::from_le_bytes(b)
}

/// A counter's change between two readings; 128-bit counters wrap, and a
/// change larger than half the range is a reset (a replaced or formatted
/// drive), not a wrap.
pub fn counter_delta(before: u128, after: u128) -> Result<u128, String> {
    let d = after.wrapping_sub(before);
    if d > u128::MAX / 2 {
        Err(format!(
            "the drive's counter went back from {before} to {after} (reset or replaced)"
        ))
    } else {
        Ok(d)
    }
}

/// What the drive wrote over a window (docs/semantics.md, "Drive writes").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriveWrites {
    /// The namespace and its controller ("nvme0n1 on nvme0").
    pub device: String,
    /// Host bytes the drive received (Data Units Written × 512,000).
    pub host_bytes_written: u64,
    pub host_bytes_read: u64,
    /// Bytes written to the flash (OCP C0h), when the drive reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_bytes_written: Option<u64>,
    /// The namespace's size, for drive writes per day.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_bytes: Option<u64>,
    /// Percentage Used before and after the window.
    pub percentage_used: (u8, u8),
    /// The drive's Endurance Estimate (its Endurance Group's rated
    /// lifetime writes, bytes), when it reports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endurance_estimate_bytes: Option<u64>,
}

/// A year of 365.25 days, in seconds.
const SECONDS_PER_YEAR: f64 = 365.25 * 86_400.0;

/// Where a block device's NVMe logs are read from.
#[derive(Debug, Clone, PartialEq)]
pub struct NvmeNamespace {
    /// "nvme0n1"
    pub namespace: String,
    /// "/dev/nvme0"
    pub controller: PathBuf,
    pub capacity_bytes: Option<u64>,
    /// The namespace identifier (sysfs `nsid`), for Identify Namespace.
    pub nsid: Option<u32>,
}

/// The NVMe namespace behind block device `major:minor` (a partition's
/// whole disk), or why there is none.
pub fn namespace_of(device: &str) -> Result<NvmeNamespace, String> {
    let sys = Path::new("/sys/dev/block").join(device);
    let real = sys
        .canonicalize()
        .map_err(|e| format!("drive writes: cannot resolve {} ({e})", sys.display()))?;
    let disk = if real.join("partition").exists() {
        real.parent().map(Path::to_path_buf).unwrap_or(real)
    } else {
        real
    };
    let name = disk
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    if !name.starts_with("nvme") {
        return Err(format!(
            "drive writes: unavailable: /dev/{name} is not an NVMe device"
        ));
    }
    // The namespace's `device` is its controller (…/nvme/nvme0).
    let controller = disk
        .join("device")
        .canonicalize()
        .ok()
        .and_then(|c| c.file_name().map(|n| n.to_string_lossy().to_string()))
        .filter(|c| c.starts_with("nvme"))
        .ok_or_else(|| format!("drive writes: no NVMe controller found for {name}"))?;
    let capacity_bytes = std::fs::read_to_string(disk.join("size"))
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .map(|sectors| sectors * 512);
    let nsid = std::fs::read_to_string(disk.join("nsid"))
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok());
    Ok(NvmeNamespace {
        namespace: name,
        controller: Path::new("/dev").join(controller),
        capacity_bytes,
        nsid,
    })
}

impl NvmeNamespace {
    /// The SMART log, and OCP's C0h where the drive has it.
    pub fn read(&self) -> Result<DriveCounters, String> {
        use std::os::unix::io::AsRawFd;
        let file = std::fs::File::open(&self.controller).map_err(|e| {
            format!(
                "drive writes: cannot open {} ({e}; the SMART log needs root or CAP_SYS_ADMIN)",
                self.controller.display()
            )
        })?;
        let fd = file.as_raw_fd();
        let smart = get_log_page(fd, 0x02, 0).map_err(|e| {
            format!(
                "drive writes: Get Log Page 02h on {} failed ({e})",
                self.controller.display()
            )
        })?;
        let (data_units_read, data_units_written, percentage_used) = parse_smart_log(&smart)?;
        // A drive without C0h answers with an error or a page of another GUID.
        let media_bytes_written = get_log_page(fd, 0xC0, 0)
            .ok()
            .and_then(|p| parse_ocp_c0(&p));
        Ok(DriveCounters {
            data_units_read,
            data_units_written,
            percentage_used,
            media_bytes_written,
            endurance_estimate_bytes: self.endurance_estimate(fd),
        })
    }

    /// The Endurance Estimate of the namespace's Endurance Group: Identify
    /// Namespace gives the group, log 09h of that group the estimate.
    /// None on a drive without endurance groups or without an estimate.
    fn endurance_estimate(&self, fd: libc::c_int) -> Option<u128> {
        let mut identify = vec![0u8; IDENTIFY_BYTES];
        // Identify (admin opcode 06h), CNS 00h: the namespace's data structure.
        admin_command(fd, 0x06, self.nsid?, &mut identify, 0, 0).ok()?;
        let group = parse_endurance_group_id(&identify)?;
        let page = get_log_page(fd, 0x09, group).ok()?;
        parse_endurance_group_log(&page)
    }

    pub fn describe(&self) -> String {
        format!("{} on {}", self.namespace, self.controller.display())
    }
}

/// `struct nvme_passthru_cmd` of <linux/nvme_ioctl.h> (72 bytes).
#[repr(C)]
#[derive(Default)]
#[allow(dead_code)] // The kernel reads every field; Rust only writes some.
struct PassthruCmd {
    opcode: u8,
    flags: u8,
    rsvd1: u16,
    nsid: u32,
    cdw2: u32,
    cdw3: u32,
    metadata: u64,
    addr: u64,
    metadata_len: u32,
    data_len: u32,
    cdw10: u32,
    cdw11: u32,
    cdw12: u32,
    cdw13: u32,
    cdw14: u32,
    cdw15: u32,
    timeout_ms: u32,
    result: u32,
}

/// `NVME_IOCTL_ADMIN_CMD`: `_IOWR('N', 0x41, struct nvme_admin_cmd)`.
const NVME_IOCTL_ADMIN_CMD: libc::c_ulong =
    (3 << 30) | (72 << 16) | ((b'N' as libc::c_ulong) << 8) | 0x41;

/// Get Log Page (admin opcode 02h) of `log_id`, 512 bytes, for every
/// namespace (NSID FFFFFFFFh). CDW10: bits 31:16 NUMDL (dwords − 1),
/// bits 7:0 the log identifier; CDW11 bits 31:16 the Log Specific
/// Identifier (the Endurance Group for log 09h, else 0).
fn get_log_page(fd: libc::c_int, log_id: u8, specific: u16) -> Result<Vec<u8>, String> {
    let mut page = vec![0u8; LOG_BYTES];
    let dwords = (LOG_BYTES / 4 - 1) as u32;
    let cdw10 = (dwords << 16) | u32::from(log_id);
    let cdw11 = u32::from(specific) << 16;
    admin_command(fd, 0x02, 0xFFFF_FFFF, &mut page, cdw10, cdw11)?;
    Ok(page)
}

/// One admin command reading `data.len()` bytes into `data`.
fn admin_command(
    fd: libc::c_int,
    opcode: u8,
    nsid: u32,
    data: &mut [u8],
    cdw10: u32,
    cdw11: u32,
) -> Result<(), String> {
    let mut cmd = PassthruCmd {
        opcode,
        nsid,
        addr: data.as_mut_ptr() as u64,
        data_len: data.len() as u32,
        cdw10,
        cdw11,
        ..PassthruCmd::default()
    };
    // SAFETY: the ioctl reads `cmd` and writes at most `data_len` bytes
    // into `data`, which outlives the call.
    let rc = unsafe { libc::ioctl(fd, NVME_IOCTL_ADMIN_CMD as _, &mut cmd as *mut PassthruCmd) };
    match rc {
        0 => Ok(()),
        rc if rc < 0 => Err(std::io::Error::last_os_error().to_string()),
        status => Err(format!("NVMe status {status:#x}")),
    }
}

impl DriveWrites {
    /// The change from `before` to `after` on `ns`.
    pub fn between(
        ns: &NvmeNamespace,
        before: &DriveCounters,
        after: &DriveCounters,
    ) -> Result<Self, String> {
        let bytes = |units: u128| -> u64 {
            units
                .saturating_mul(DATA_UNIT_BYTES)
                .min(u128::from(u64::MAX)) as u64
        };
        let written = counter_delta(before.data_units_written, after.data_units_written)?;
        let read = counter_delta(before.data_units_read, after.data_units_read)?;
        let media = match (before.media_bytes_written, after.media_bytes_written) {
            (Some(a), Some(b)) => Some(counter_delta(a, b)?.min(u64::MAX as u128) as u64),
            _ => None,
        };
        Ok(Self {
            device: ns.describe(),
            host_bytes_written: bytes(written),
            host_bytes_read: bytes(read),
            media_bytes_written: media,
            capacity_bytes: ns.capacity_bytes,
            percentage_used: (before.percentage_used, after.percentage_used),
            endurance_estimate_bytes: after
                .endurance_estimate_bytes
                .map(|b| b.min(u128::from(u64::MAX)) as u64),
        })
    }

    /// Flash bytes per host byte: the drive's own write amplification.
    pub fn drive_write_amplification(&self) -> Option<f64> {
        let media = self.media_bytes_written? as f64;
        (self.host_bytes_written > 0).then(|| media / self.host_bytes_written as f64)
    }

    /// Whole drives written per day at this window's rate.
    pub fn drive_writes_per_day(&self, window_s: f64) -> Option<f64> {
        let capacity = self.capacity_bytes? as f64;
        (window_s > 0.0 && capacity > 0.0)
            .then(|| self.host_bytes_written as f64 / window_s * 86_400.0 / capacity)
    }

    /// Years until the host writes reach the drive's Endurance Estimate at
    /// this window's rate, counted from a new drive (the estimate assumes
    /// the drive's own write amplification is 1, so host bytes are its
    /// measure). None without an estimate or without writes.
    pub fn years_to_endurance_estimate(&self, window_s: f64) -> Option<f64> {
        let estimate = self.endurance_estimate_bytes? as f64;
        let per_second = self.host_bytes_written as f64 / window_s;
        (window_s > 0.0 && per_second > 0.0).then(|| estimate / per_second / SECONDS_PER_YEAR)
    }

    /// Two windows' writes as one (repeats).
    pub fn add(&self, other: &Self) -> Self {
        Self {
            device: other.device.clone(),
            host_bytes_written: self.host_bytes_written + other.host_bytes_written,
            host_bytes_read: self.host_bytes_read + other.host_bytes_read,
            media_bytes_written: match (self.media_bytes_written, other.media_bytes_written) {
                (Some(a), Some(b)) => Some(a + b),
                _ => None,
            },
            capacity_bytes: other.capacity_bytes,
            percentage_used: (self.percentage_used.0, other.percentage_used.1),
            endurance_estimate_bytes: other.endurance_estimate_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A SMART / Health log page laid out per NVMe Base Specification 2.0,
    /// Figure "SMART / Health Information Log Page": Critical Warning at
    /// byte 0, Composite Temperature 2:1, Available Spare 3, Spare
    /// Threshold 4, Percentage Used 5, Data Units Read 47:32, Data Units
    /// Written 63:48, Host Read Commands 79:64 (all little-endian).
    fn smart_page(read_units: u128, written_units: u128, used: u8) -> Vec<u8> {
        let mut p = vec![0u8; 512];
        p[1..3].copy_from_slice(&310u16.to_le_bytes()); // 37 °C in kelvin
        p[3] = 100;
        p[4] = 10;
        p[5] = used;
        p[32..48].copy_from_slice(&read_units.to_le_bytes());
        p[48..64].copy_from_slice(&written_units.to_le_bytes());
        p[64..80].copy_from_slice(&123_456u128.to_le_bytes());
        p
    }

    /// OCP Datacenter NVMe SSD Specification, SMART / Health Information
    /// Extended log (C0h): Physical Media Units Written 15:0, Physical
    /// Media Units Read 31:16, Log Page Version 495:494, Log Page GUID
    /// 511:496 (the same offsets as nvme-cli's OCP plugin, SCAO_PMUW = 0,
    /// SCAO_LPG = 496).
    fn ocp_page(media_written: u128) -> Vec<u8> {
        let mut p = vec![0u8; 512];
        p[0..16].copy_from_slice(&media_written.to_le_bytes());
        p[16..32].copy_from_slice(&7u128.to_le_bytes());
        p[494..496].copy_from_slice(&3u16.to_le_bytes());
        p[496..512].copy_from_slice(&OCP_C0_GUID);
        p
    }

    #[test]
    fn the_smart_log_gives_data_units_at_their_offsets() {
        let page = smart_page(5, (1u128 << 64) + 9, 3);
        assert_eq!(parse_smart_log(&page), Ok((5, (1u128 << 64) + 9, 3)));
        assert!(parse_smart_log(&page[..100])
            .unwrap_err()
            .contains("100 bytes"));
    }

    #[test]
    fn ocp_c0_is_read_only_under_its_guid() {
        assert_eq!(parse_ocp_c0(&ocp_page(4_096_000)), Some(4_096_000));
        let mut vendor = ocp_page(4_096_000);
        vendor[500] ^= 0xFF;
        assert_eq!(parse_ocp_c0(&vendor), None);
    }

    #[test]
    fn drive_writes_in_units_across_a_wrap_with_flash_bytes() {
        let ns = NvmeNamespace {
            namespace: "nvme0n1".into(),
            controller: "/dev/nvme0".into(),
            capacity_bytes: Some(1_000_000_000_000),
            nsid: Some(1),
        };
        let counters = |page: &[u8], ocp: &[u8]| {
            let (r, w, used) = parse_smart_log(page).unwrap();
            DriveCounters {
                data_units_read: r,
                data_units_written: w,
                percentage_used: used,
                media_bytes_written: parse_ocp_c0(ocp),
                endurance_estimate_bytes: None,
            }
        };
        // Written wraps from 2^128 - 3 to 5: 8 units; read 10 -> 12: 2 units.
        let before = counters(&smart_page(10, u128::MAX - 2, 1), &ocp_page(1_000));
        let after = counters(&smart_page(12, 5, 2), &ocp_page(1_000 + 12_288_000));
        let w = DriveWrites::between(&ns, &before, &after).unwrap();
        assert_eq!(w.host_bytes_written, 8 * 512_000);
        assert_eq!(w.host_bytes_read, 2 * 512_000);
        assert_eq!(w.media_bytes_written, Some(12_288_000));
        assert_eq!(w.drive_write_amplification(), Some(3.0));
        assert_eq!(w.percentage_used, (1, 2));
        // 4,096,000 bytes in 86.4 s: 4.096 GB a day of a 1 TB drive.
        let dwpd = w.drive_writes_per_day(86.4).unwrap();
        assert!((dwpd - 0.004096).abs() < 1e-12, "{dwpd}");
        // A counter that goes back is a reset, not a wrap.
        let reset = DriveWrites::between(&ns, &after, &before).unwrap_err();
        assert!(reset.contains("went back"), "{reset}");
    }

    /// Endurance Group Information log (09h) per NVMe Base Specification
    /// 2.0, Figure "Endurance Group Information Log Page": Critical Warning
    /// 0, Available Spare 3, Threshold 4, Percentage Used 5, Endurance
    /// Estimate 47:32, Data Units Read 63:48, Data Units Written 79:64,
    /// Media Units Written 95:80 (the layout of nvme-cli's
    /// `struct nvme_endurance_group_log`).
    fn endurance_page(estimate_billions: u128) -> Vec<u8> {
        let mut p = vec![0u8; 512];
        p[3] = 100;
        p[5] = 4;
        p[32..48].copy_from_slice(&estimate_billions.to_le_bytes());
        p[48..64].copy_from_slice(&77u128.to_le_bytes());
        p[64..80].copy_from_slice(&88u128.to_le_bytes());
        p
    }

    #[test]
    fn the_endurance_estimate_is_billions_of_bytes_of_the_namespaces_group() {
        // A 3.84 TB drive rated for 7,008 TB written (1 DWPD for 5 years).
        let page = endurance_page(7_008_000);
        assert_eq!(
            parse_endurance_group_log(&page),
            Some(7_008_000_000_000_000)
        );
        assert_eq!(parse_endurance_group_log(&endurance_page(0)), None);
        assert_eq!(parse_endurance_group_log(&page[..64]), None);
        // Identify Namespace: ENDGID at bytes 103:102.
        let mut identify = vec![0u8; 4096];
        assert_eq!(parse_endurance_group_id(&identify), None);
        identify[102..104].copy_from_slice(&2u16.to_le_bytes());
        assert_eq!(parse_endurance_group_id(&identify), Some(2));
        assert_eq!(parse_endurance_group_id(&identify[..100]), None);
    }

    #[test]
    fn years_to_the_endurance_estimate_at_the_windows_rate() {
        let mut w = DriveWrites {
            device: "nvme0n1 on /dev/nvme0".into(),
            host_bytes_written: 1_000_000_000,
            host_bytes_read: 0,
            media_bytes_written: None,
            capacity_bytes: Some(3_840_000_000_000),
            percentage_used: (0, 0),
            endurance_estimate_bytes: None,
        };
        assert_eq!(w.years_to_endurance_estimate(10.0), None);
        // 10^8 bytes a second against 7,008 TB: 7.008e7 s, 2.2207 years.
        w.endurance_estimate_bytes = Some(7_008_000_000_000_000);
        let years = w.years_to_endurance_estimate(10.0).unwrap();
        assert!(
            (years - 7.008e7 / (365.25 * 86_400.0)).abs() < 1e-9,
            "{years}"
        );
        assert_eq!(w.years_to_endurance_estimate(0.0), None);
        w.host_bytes_written = 0;
        assert_eq!(w.years_to_endurance_estimate(10.0), None);
    }

    #[test]
    fn a_virtio_or_missing_device_is_not_nvme() {
        // The root filesystem's device here (virtio on the test machine).
        let Some(dev) = std::fs::read_to_string("/proc/self/mountinfo")
            .ok()
            .and_then(|m| {
                m.lines()
                    .find(|l| l.split_whitespace().nth(4) == Some("/"))
                    .and_then(|l| l.split_whitespace().nth(2).map(str::to_string))
            })
        else {
            eprintln!("skipped: no mountinfo for /");
            return;
        };
        match namespace_of(&dev) {
            Ok(ns) => eprintln!("skipped: / is on NVMe ({})", ns.describe()),
            Err(why) => assert!(
                why.contains("is not an NVMe device") || why.contains("cannot resolve"),
                "{why}"
            ),
        }
        let err = namespace_of("4095:4095").unwrap_err();
        assert!(err.contains("cannot resolve"), "{err}");
    }
}
