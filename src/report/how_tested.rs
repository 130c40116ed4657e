//! "How we tested": what a reader needs to repeat or judge the study, per
//! configuration, from what the steps recorded: the device (model,
//! capacity, firmware where the OS knows them) and its 4 corners when the
//! plan measured them, the file system and its mount options, the host,
//! the engine and its key options, the records and their sizes, each
//! workload's mix, distribution and operation counts, the threads and
//! repeats, and what ran between steps.

use super::numbers::ops;
use crate::results::Record;

/// One row of the section's table: what it is, then one cell per series.
pub type Row = (String, Vec<String>);

/// The rows for `records` tagged with their series, in `series` order.
pub fn rows(records: &[(String, Record)], series: &[String]) -> Vec<Row> {
    let per_series: Vec<Vec<&Record>> = series
        .iter()
        .map(|s| {
            records
                .iter()
                .filter(|(name, _)| name == s)
                .map(|(_, r)| r)
                .collect()
        })
        .collect();
    fn engine_steps<'a>(rs: &[&'a Record]) -> Vec<&'a Record> {
        rs.iter()
            .copied()
            .filter(|r| matches!(r.output.command.as_str(), "load" | "run" | "bench"))
            .collect()
    }
    if per_series.iter().all(|rs| engine_steps(rs).is_empty()) {
        return Vec::new();
    }
    let cell = |f: &dyn Fn(&[&Record], &[&Record]) -> String| -> Vec<String> {
        per_series
            .iter()
            .map(|rs| f(rs, &engine_steps(rs)))
            .collect()
    };
    vec![
        ("Device".into(), cell(&|_, e| device(e))),
        ("Device: 4 corners".into(), cell(&|all, _| corners(all))),
        ("File system".into(), cell(&|_, e| file_system(e))),
        ("Host".into(), cell(&|_, e| host(e))),
        ("Engine".into(), cell(&|_, e| engine(e))),
        ("Records".into(), cell(&|_, e| records_text(e))),
        ("Workloads".into(), cell(&|_, e| workloads(e))),
        ("Threads and repeats".into(), cell(&|_, e| threads(e))),
        ("Between steps".into(), cell(&|_, e| between(e))),
    ]
}

fn first_data_dir<'a>(e: &[&'a Record]) -> Option<&'a crate::host::DataDirInfo> {
    e.iter().find_map(|r| r.output.host.data_dir.as_ref())
}

/// "Samsung SSD 980 PRO 1TB, 1.0 TB, firmware 5B2QGXA7" as far as known.
fn device(e: &[&Record]) -> String {
    let Some(d) = first_data_dir(e) else {
        return "no data directory (a server engine's, or none)".into();
    };
    if d.device_number.starts_with("0:") {
        return format!(
            "none: {} is a {} (memory or a virtual file system, no block device)",
            d.mount_point, d.filesystem
        );
    }
    let mut parts = vec![d
        .device_model
        .clone()
        .unwrap_or_else(|| format!("{} (the OS names no model)", d.source))];
    if let Some(bytes) = d.device_bytes {
        parts.push(format!("{} capacity", crate::plan::format_size(bytes)));
    }
    parts.push(match &d.device_firmware {
        Some(f) => format!("firmware {f}"),
        None => "firmware not known to the OS".into(),
    });
    format!("{} (block device {})", parts.join(", "), d.device_number)
}

/// The plan's corner measurements in one line, or how to get them.
fn corners(all: &[&Record]) -> String {
    let measured: Vec<String> = all
        .iter()
        .filter(|r| r.step.kind == "corners")
        .flat_map(|r| &r.output.measurements)
        .filter_map(|m| {
            let d = m.device.as_ref()?;
            let what = format!(
                "{} KiB {} {}",
                d.block_bytes / 1024,
                if d.random { "random" } else { "sequential" },
                if d.write { "write" } else { "read" }
            );
            Some(if d.random {
                format!("{what} {} IOPS", ops(m.ops_per_sec))
            } else {
                format!("{what} {} MB/s", ops(d.mb_per_sec))
            })
        })
        .collect();
    if measured.is_empty() {
        "not measured by this plan (`kvperf device corners DIR`, docs/your-ssd.md step 3)".into()
    } else {
        format!(
            "{}, queue depth 32, direct I/O (the table below)",
            measured.join(", ")
        )
    }
}

/// "ext4 on /dev/vda at /, mounted rw,relatime; rw; data in /var/tmp/kv".
fn file_system(e: &[&Record]) -> String {
    let Some(d) = first_data_dir(e) else {
        return "-".into();
    };
    let options = if d.mount_options.is_empty() {
        "options not recorded".to_string()
    } else {
        format!("mounted {}", d.mount_options)
    };
    format!(
        "{} on {} at {} ({options}); data in {}",
        d.filesystem, d.source, d.mount_point, d.path
    )
}

fn host(e: &[&Record]) -> String {
    let Some(h) = e.first().map(|r| &r.output.host) else {
        return "-".into();
    };
    format!(
        "{}, {} logical cores, {:.1} GiB of memory, kernel {}{}",
        h.cpu_model,
        h.logical_cores,
        h.memory_bytes as f64 / (1u64 << 30) as f64,
        h.kernel,
        if h.os.is_empty() {
            String::new()
        } else {
            format!(", {}", h.os)
        }
    )
}

/// Options a reader compares first, where the engine has them.
const KEY_OPTIONS: [&str; 14] = [
    "write_buffer_size",
    "max_write_buffer_number",
    "block_cache_size",
    "cache_size",
    "block_size",
    "compression",
    "bloom_bits",
    "max_background_jobs",
    "use_direct_reads",
    "use_direct_io_for_flush_and_compaction",
    "wal",
    "sync",
    "durability",
    "journal",
];

/// "rocksdb 11.8.1; set by the plan: options=...; key options: ...".
fn engine(e: &[&Record]) -> String {
    let Some(r) = e.first() else {
        return "-".into();
    };
    let info = &r.output.engine;
    let prefix = format!("{}.", info.name);
    let set: Vec<String> = r
        .output
        .settings
        .iter()
        .filter_map(|(k, v)| k.strip_prefix(&prefix).map(|k| format!("{k}={v}")))
        .collect();
    let key: Vec<String> = KEY_OPTIONS
        .iter()
        .filter_map(|k| info.options.get(*k).map(|v| format!("{k}={v}")))
        .collect();
    let mut text = format!("{} {}", info.name, info.version);
    if !set.is_empty() {
        text.push_str(&format!("; set by the plan: {}", set.join(", ")));
    }
    if !key.is_empty() {
        text.push_str(&format!("; in effect: {}", key.join(", ")));
    }
    text.push_str(&format!(
        " ({} options recorded in each results line's engine.options)",
        info.options.len()
    ));
    text
}

fn setting<'a>(r: &'a Record, key: &str) -> Option<&'a str> {
    r.output.settings.get(key).map(|v| v.trim())
}

/// "25,000 records of 4 fields x 1,024 B, keys `user` + FNV hash of the
/// key number (YCSB's hashed order), loaded by 32 threads".
fn records_text(e: &[&Record]) -> String {
    let Some(r) = e.first() else {
        return "-".into();
    };
    if r.output.command == "bench" {
        return format!(
            "{} keys of {} B, values of {} B (db_bench)",
            setting(r, "num").unwrap_or("?"),
            setting(r, "key_size").unwrap_or("16"),
            setting(r, "value_size").unwrap_or("100"),
        );
    }
    let count = setting(r, "recordcount")
        .and_then(|v| v.parse::<u64>().ok())
        .map_or("?".into(), |n| ops(n as f64));
    let fields = setting(r, "fieldcount").unwrap_or("10");
    let length = setting(r, "fieldlength").unwrap_or("100");
    let length = crate::units::parse_size(length).map_or(length.to_string(), |b| ops(b as f64));
    let distribution = match setting(r, "fieldlengthdistribution") {
        None | Some("constant") => String::new(),
        Some(d) => format!(" ({d} lengths up to it)"),
    };
    let order = match setting(r, "insertorder") {
        Some("ordered") => "keys `user` + the key number in order",
        _ => "keys `user` + FNV hash of the key number (YCSB's hashed order)",
    };
    let load = e
        .iter()
        .find(|r| r.step.kind == "load")
        .map_or(String::new(), |l| {
            format!(", loaded by {} threads", l.step.threads)
        });
    format!("{count} records of {fields} fields x {length} B{distribution}, {order}{load}")
}

/// Per workload: its mix, distribution, and what ended its runs.
fn workloads(e: &[&Record]) -> String {
    let mut seen: Vec<String> = Vec::new();
    let mut out: Vec<String> = Vec::new();
    for r in e.iter().filter(|r| r.step.kind != "load") {
        let name = if r.step.label.is_empty() {
            r.step.workload.to_uppercase()
        } else {
            format!("{} {}", r.step.workload.to_uppercase(), r.step.label)
        };
        if seen.contains(&name) {
            continue;
        }
        seen.push(name.clone());
        let cells: Vec<&&Record> = e
            .iter()
            .filter(|x| {
                x.step.kind != "load"
                    && x.step.workload == r.step.workload
                    && x.step.label == r.step.label
            })
            .collect();
        let operations: u64 = cells
            .iter()
            .filter_map(|x| x.measured())
            .map(|m| m.operations)
            .sum();
        if r.output.command == "bench" {
            out.push(format!(
                "{name}: {} in {}",
                count(operations, "operation"),
                count(cells.len() as u64, "cell")
            ));
            continue;
        }
        let mix: Vec<String> = [
            ("readproportion", "read"),
            ("updateproportion", "update"),
            ("insertproportion", "insert"),
            ("scanproportion", "scan"),
            ("readmodifywriteproportion", "read-modify-write"),
        ]
        .iter()
        .filter_map(|(k, label)| {
            let p: f64 = setting(r, k)?.parse().ok()?;
            (p > 0.0).then(|| format!("{label} {p}"))
        })
        .collect();
        let distribution = setting(r, "requestdistribution").unwrap_or("uniform");
        let ended = match (
            setting(r, "operationcount").and_then(|v| v.parse::<u64>().ok()),
            setting(r, "maxexecutiontime"),
        ) {
            (Some(0) | None, Some(t)) => format!("each run {t} s (the time governs)"),
            (Some(n), Some(t)) => format!("each run {} operations, at most {t} s", ops(n as f64)),
            (Some(n), None) => format!("each run {} operations", ops(n as f64)),
            (None, None) => "each run YCSB's default 1,000 operations".into(),
        };
        out.push(format!(
            "{name}: {}, {distribution} requests; {ended}; {} measured in {}",
            mix.join(" / "),
            count(operations, "operation"),
            count(cells.len() as u64, "cell")
        ));
    }
    if out.is_empty() {
        "-".into()
    } else {
        out.join("; ")
    }
}

/// "1 cell", "2,000 operations".
fn count(n: u64, what: &str) -> String {
    format!("{} {what}{}", ops(n as f64), if n == 1 { "" } else { "s" })
}

fn threads(e: &[&Record]) -> String {
    let mut threads: Vec<u64> = e
        .iter()
        .filter(|r| r.step.kind != "load")
        .map(|r| r.step.threads)
        .collect();
    threads.sort_unstable();
    threads.dedup();
    let repeats = e.iter().map(|r| r.step.repeat).max().unwrap_or(1);
    let list: Vec<String> = threads.iter().map(u64::to_string).collect();
    format!(
        "{} ({}); {} of each cell",
        count(list.len() as u64, "thread count"),
        list.join(", "),
        count(repeats as u64, "repeat"),
    )
}

/// What ran before the measured steps, from each record's `before`.
fn between(e: &[&Record]) -> String {
    let measured: Vec<&&Record> = e.iter().filter(|r| r.step.kind != "load").collect();
    if measured.is_empty() {
        return "-".into();
    }
    let with = |what: &dyn Fn(&[String]) -> bool| {
        measured
            .iter()
            .filter(|r| r.before.iter().any(|c| what(c)))
            .count()
    };
    let compacted =
        with(&|c| c.first().is_some_and(|w| w == "settle") && c.iter().any(|w| w == "--compact"));
    let settled = with(&|c| c.first().is_some_and(|w| w == "settle")) - compacted;
    let dropped = with(&|c| c.first().is_some_and(|w| w == "drop_caches"));
    let n = measured.len();
    let of = |k: usize| {
        if k == n {
            "every measured step".to_string()
        } else {
            format!("{k} of {n} measured steps")
        }
    };
    let mut parts = Vec::new();
    if compacted > 0 {
        parts.push(format!(
            "before {}: the store compacted in full and its flushes and compactions waited for (`kvperf settle --compact`)",
            of(compacted)
        ));
    }
    if settled > 0 {
        parts.push(format!(
            "before {}: flushes and compactions waited for (`kvperf settle`)",
            of(settled)
        ));
    }
    if dropped > 0 {
        parts.push(format!("before {}: the page cache dropped", of(dropped)));
    }
    if parts.is_empty() {
        "nothing: each step started on the store as the one before left it".into()
    } else {
        format!(
            "{}; each step a new process, which opens the store and closes it (the close's flush counts in the step)",
            parts.join("; ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::OpKind;
    use crate::results::testing;

    fn study_records() -> Vec<(String, Record)> {
        let mut load = testing::record("mine", "a", 32, 1000.0, OpKind::Insert, &[1000; 10]);
        load.step.kind = "load".into();
        let mut run = testing::record("mine", "f", 8, 1000.0, OpKind::Read, &[1000; 10]);
        for r in [&mut load, &mut run] {
            let s = &mut r.output.settings;
            for (k, v) in [
                ("recordcount", "25000"),
                ("fieldcount", "4"),
                ("fieldlength", "1024"),
                ("readproportion", "0.5"),
                ("readmodifywriteproportion", "0.5"),
                ("operationcount", "0"),
                ("maxexecutiontime", "10"),
                ("requestdistribution", "uniform"),
                ("rocksdb.options", "use_direct_reads=true"),
            ] {
                s.insert(k.into(), v.into());
            }
            r.output.engine.name = "rocksdb".into();
            r.output.engine.version = "11.8.1".into();
            r.output
                .engine
                .options
                .insert("write_buffer_size".into(), "67108864".into());
            r.output.host.data_dir = Some(crate::host::DataDirInfo {
                path: "/mnt/nvme/kv".into(),
                filesystem: "ext4".into(),
                mount_point: "/mnt/nvme".into(),
                source: "/dev/nvme0n1p1".into(),
                device_number: "259:1".into(),
                device_model: Some("Micron 7400".into()),
                mount_options: "rw,noatime; rw".into(),
                device_bytes: Some(1_920_000_000_000),
                device_firmware: Some("E1MU23BC".into()),
            });
        }
        run.before = vec![vec!["settle".into(), "--compact".into()]];
        vec![("mine".into(), load), ("mine".into(), run)]
    }

    #[test]
    fn the_section_says_how_the_study_ran() {
        let rows = rows(&study_records(), &["mine".into()]);
        let get = |what: &str| {
            rows.iter()
                .find(|(w, _)| w == what)
                .map(|(_, cells)| cells[0].clone())
                .unwrap()
        };
        assert_eq!(
            get("Device"),
            "Micron 7400, 1.9 TB capacity, firmware E1MU23BC (block device 259:1)"
        );
        assert!(get("Device: 4 corners").starts_with("not measured by this plan"));
        assert_eq!(
            get("File system"),
            "ext4 on /dev/nvme0n1p1 at /mnt/nvme (mounted rw,noatime; rw); data in /mnt/nvme/kv"
        );
        let engine = get("Engine");
        assert!(engine.starts_with("rocksdb 11.8.1; set by the plan: options=use_direct_reads=true; in effect: write_buffer_size=67108864"), "{engine}");
        assert!(get("Records")
            .starts_with("25,000 records of 4 fields x 1,024 B, keys `user` + FNV hash"));
        assert!(get("Records").ends_with("loaded by 32 threads"));
        assert_eq!(
            get("Workloads"),
            "F: read 0.5 / read-modify-write 0.5, uniform requests; each run 10 s (the time governs); 10 operations measured in 1 cell"
        );
        assert!(get("Between steps")
            .starts_with("before every measured step: the store compacted in full"));
        assert_eq!(
            get("Threads and repeats"),
            "1 thread count (8); 1 repeat of each cell"
        );
    }

    #[test]
    fn a_memory_file_system_has_no_device_and_corners_show_when_measured() {
        let mut records = study_records();
        for (_, r) in &mut records {
            let d = r.output.host.data_dir.as_mut().unwrap();
            d.device_number = "0:27".into();
            d.filesystem = "tmpfs".into();
            d.mount_point = "/dev/shm".into();
        }
        let mut corner = records[0].1.clone();
        corner.step.kind = "corners".into();
        corner.output.measurements[0].device = Some(crate::results::step::DeviceFigures {
            block_bytes: 4096,
            queue_depth: 32,
            random: true,
            write: false,
            mb_per_sec: 400.0,
            fio: None,
            buffers: None,
        });
        corner.output.measurements[0].ops_per_sec = 100_000.0;
        records.insert(0, ("mine".into(), corner));
        let rows = rows(&records, &["mine".into()]);
        assert!(
            rows[0].1[0].starts_with("none: /dev/shm is a tmpfs"),
            "{:?}",
            rows[0]
        );
        assert_eq!(
            rows[1].1[0],
            "4 KiB random read 100,000 IOPS, queue depth 32, direct I/O (the table below)"
        );
    }
}
