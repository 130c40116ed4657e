//! "Benchmark my SSD": shipped workloads and plans known by name from any
//! directory, `--db NAME=DIR` running one configuration on the user's
//! directory, `--set` winning over `--scale`, `--set` typos named, and
//! `device corners --with-fio` refusing before any I/O when fio is absent.

use crate::common;

use crate::common::{assert_input_error, kvperf, metric};

#[test]
fn a_shipped_workload_is_found_by_name_and_a_file_in_the_cwd_wins() {
    let tmp = tempfile::tempdir().unwrap();
    let by_name = [
        "run",
        "--engine",
        "null",
        "-P",
        "workloada",
        "-p",
        "recordcount=100",
    ];
    let out = kvperf(tmp.path(), &by_name);
    assert_eq!(out.code, 0, "{}", out.stderr);
    // The shipped workloada: 1000 operations, half of them reads.
    let reads = metric(&out.stdout, "READ", "Operations").unwrap();
    let updates = metric(&out.stdout, "UPDATE", "Operations").unwrap();
    assert_eq!(reads + updates, 1000.0, "{}", out.stdout);
    let out = kvperf(
        tmp.path(),
        &["load", "--engine", "null", "-P", "workloads/workloadc"],
    );
    assert_eq!(out.code, 0, "workloads/NAME too: {}", out.stderr);

    std::fs::write(
        tmp.path().join("workloada"),
        "operationcount=37\nreadproportion=1\nupdateproportion=0\n",
    )
    .unwrap();
    let out = kvperf(tmp.path(), &by_name);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(metric(&out.stdout, "READ", "Operations"), Some(37.0));
    assert_eq!(metric(&out.stdout, "UPDATE", "Operations"), None);

    let out = kvperf(tmp.path(), &["run", "--engine", "null", "-P", "workloadz"]);
    assert_input_error(&out, "nor is it a shipped workload (workloada, workloadb,");
}

#[test]
fn shipped_plans_are_known_by_name_prefix_and_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let out = kvperf(tmp.path(), &["plan", "list"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for name in [
        "quickstart",
        "smoke",
        "seed-000-rocksdb-ycsb",
        "seed-004-cassandra-ycsb",
    ] {
        assert!(out.stdout.contains(name), "{name}: {}", out.stdout);
    }
    let out = kvperf(
        tmp.path(),
        &["plan", "show", "seed-004", "--scale", "0.00001"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with("plan 'seed-004-cassandra-ycsb'"),
        "{}",
        out.stdout
    );
    let out = kvperf(tmp.path(), &["plan", "show", "plans/quickstart.toml"]);
    assert_eq!(out.code, 0, "plans/NAME.toml, absent here: {}", out.stderr);
    let out = kvperf(tmp.path(), &["plan", "show", "seed-002"]);
    assert_input_error(
        &out,
        "names several shipped plans: seed-002-engines, seed-002-mongodb-wire",
    );
    let out = kvperf(tmp.path(), &["plan", "show", "seed-009"]);
    assert_input_error(
        &out,
        "does not exist, nor is it a shipped plan's name; shipped: quickstart, smoke",
    );
}

#[test]
fn db_with_a_new_name_runs_one_configuration_on_that_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let ssd = tmp.path().join("mnt/nvme/kvperf");
    let mine = format!("mine={}", ssd.display());
    let out = kvperf(
        tmp.path(),
        &[
            "plan", "show", "seed-000", "--scale", "0.00001", "--db", &mine,
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("settings of config 'tmpfs'"),
        "{}",
        out.stderr
    );
    let steps: Vec<&str> = out.stdout.lines().filter(|l| l.contains("-r1")).collect();
    assert_eq!(steps.len(), 51, "one load and 50 runs: {}", out.stdout);
    assert!(steps.iter().all(|l| l.contains(" mine/")), "{}", out.stdout);
    assert!(!out.stdout.contains("tmpfs/") && !out.stdout.contains("disk/"));

    // A real run of a shipped plan from an empty directory, on `mine` only.
    let out = kvperf(
        tmp.path(),
        &[
            "plan",
            "run",
            "quickstart",
            "--scale",
            "0.01",
            "--set",
            "threads=[1]",
            "--set",
            "steps.1.workloads=[\"c\"]",
            "--set",
            "steps.2.workloads=[\"c\"]",
            "--db",
            &mine,
            "--results",
            "r.jsonl",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let records = std::fs::read_to_string(tmp.path().join("r.jsonl")).unwrap();
    assert_eq!(
        records.lines().count(),
        3,
        "the load and workload c of each run entry: {records}"
    );
    for line in records.lines() {
        assert!(line.contains("\"mine/00"), "{line}");
    }
    assert!(
        ssd.join(".kvperf-data").exists(),
        "the store is on the SSD's directory"
    );
}

#[test]
fn db_refuses_a_directory_it_cannot_use_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let theirs = tmp.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::write(theirs.join("thesis.tex"), "mine").unwrap();
    let db = format!("mine={}", theirs.display());
    let out = kvperf(
        tmp.path(),
        &[
            "plan",
            "run",
            "quickstart",
            "--scale",
            "0.01",
            "--db",
            &db,
            "--results",
            "r.jsonl",
        ],
    );
    assert_input_error(&out, "config 'mine': --db '");
    assert!(out
        .stderr
        .contains("holds files kvperf did not create (such as 'thesis.tex')"));
    assert!(!tmp.path().join("r.jsonl").exists());
    std::fs::write(tmp.path().join("plainfile"), "").unwrap();
    let out = kvperf(
        tmp.path(),
        &["plan", "show", "quickstart", "--db", "mine=plainfile/db"],
    );
    assert_input_error(
        &out,
        "config 'mine': cannot create --db 'plainfile/db': 'plainfile' is not a directory",
    );
}

#[test]
fn an_explicit_set_wins_over_scale_in_either_order() {
    let tmp = tempfile::tempdir().unwrap();
    let show = |args: &[&str]| {
        let mut all = vec!["plan", "show", "seed-000"];
        all.extend_from_slice(args);
        let out = kvperf(tmp.path(), &all);
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.stdout
    };
    let scaled = show(&["--scale", "0.00001"]);
    assert!(scaled.contains("-p recordcount=2500 "), "{scaled}");
    for order in [
        ["--scale", "0.00001", "--set", "recordcount=777"],
        ["--set", "recordcount=777", "--scale", "0.00001"],
    ] {
        let out = show(&order);
        assert!(out.contains("-p recordcount=777 "), "{order:?}: {out}");
        assert!(!out.contains("recordcount=2500"), "{order:?}: {out}");
        assert!(
            out.contains("-p operationcount=2000 "),
            "still scaled: {out}"
        );
    }
}

#[test]
fn set_typos_get_a_did_you_mean_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let out = kvperf(
        tmp.path(),
        &["plan", "show", "seed-000", "--set", "recordcont=10"],
    );
    assert_input_error(
        &out,
        "unknown setting 'recordcont': did you mean 'recordcount'?",
    );
    let out = kvperf(
        tmp.path(),
        &["plan", "show", "seed-000", "--set", "thread=[4]"],
    );
    assert_input_error(&out, "did you mean 'threads'?");
    let out = kvperf(
        tmp.path(),
        &["plan", "show", "seed-000", "--set", "settle=compat"],
    );
    assert_input_error(&out, "--set settle=compat: not a value this setting takes");
    assert!(!out.stderr.contains("untagged"), "{}", out.stderr);
}

#[test]
fn corners_with_fio_refuses_before_any_io_when_fio_is_absent() {
    let tmp = tempfile::tempdir().unwrap();
    let no_fio = tmp.path().join("bin");
    std::fs::create_dir(&no_fio).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kvperf"))
        .args([
            "device",
            "corners",
            ".",
            "--size",
            "4M",
            "--runtime",
            "1",
            "--with-fio",
        ])
        .current_dir(tmp.path())
        .env("PATH", &no_fio)
        .output()
        .unwrap();
    let out = common::Output::from(out);
    // One line: nothing was laid out or measured first.
    assert_input_error(&out, "--with-fio: cannot run fio");
    assert!(out.stderr.contains("apt-get install fio"), "{}", out.stderr);
}

/// docs/your-ssd.md's three commands at `--scale 0.0001`, and the report
/// of the study with the corners beside it: every window lasts at least
/// 10 s (the load paced over `min_duration`, each run timed by it), and
/// the report has a summary, a "How we tested" section and the corners
/// measured apart, each corner's figure named by its kind, on the
/// configuration whose drive they measured. One thread count of the
/// plan's ten (`--set threads=[4]`): a window's length is set by time,
/// not by threads, and the whole sweep takes ten minutes. Slow: about 2
/// minutes.
#[test]
fn the_one_drive_study_at_scale_0_0001_has_windows_of_10_s_a_method_and_its_corners() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ssd = tmp.path().join("mnt/nvme/kvperf");
    let mine = format!("mine={}", ssd.display());
    let ssd_arg = ssd.display().to_string();
    let study = ["--scale", "0.0001", "--db", &mine, "--set", "threads=[4]"];
    let mut show = vec!["plan", "show", "seed-000"];
    show.extend_from_slice(&study);
    let out = kvperf(tmp.path(), &show);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("-p target=2496 "),
        "the load is paced: {}",
        out.stdout
    );
    let mut run = vec!["plan", "run", "seed-000"];
    run.extend_from_slice(&study);
    run.extend(["--results", "my-ssd.jsonl"]);
    let out = kvperf(tmp.path(), &run);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = kvperf(
        tmp.path(),
        &[
            "device",
            "corners",
            &ssd_arg,
            "--size",
            "8MiB",
            "--runtime",
            "1",
            "--ramp",
            "0",
            "--format",
            "json",
            "--output",
            "corners.json",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);

    let records = std::fs::read_to_string(tmp.path().join("my-ssd.jsonl")).unwrap();
    let mut kinds = Vec::new();
    for line in records.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        let window = r["output"]["measurements"]
            .as_array()
            .unwrap()
            .last()
            .unwrap();
        let seconds = window["runtime_s"].as_f64().unwrap();
        let id = r["step"]["id"].as_str().unwrap();
        assert!(seconds >= 10.0, "{id}: a window of {seconds} s");
        kinds.push(r["step"]["kind"].as_str().unwrap().to_string());
    }
    assert_eq!(
        kinds.len(),
        6,
        "the load and A, B, C, D, F at 4 threads: {kinds:?}"
    );
    assert_eq!(kinds[0], "load");

    let out = kvperf(
        tmp.path(),
        &[
            "report",
            "my-ssd.jsonl",
            "corners.json",
            "--out",
            "with-corners",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let md = std::fs::read_to_string(tmp.path().join("with-corners/report.md")).unwrap();
    for section in [
        "\n## Summary\n",
        "\n## How we tested\n",
        "\n## Device: 4 corners\n",
    ] {
        assert!(md.contains(section), "no {section:?}: {md}");
    }
    // The plan's six steps are counted; the corners beside them are not one.
    let provenance = md.lines().find(|l| l.starts_with("Plan ")).unwrap();
    assert!(
        provenance.contains(", 6 steps measured by kvperf ")
            && provenance.ends_with(", beside device corners measured apart."),
        "{provenance}"
    );
    // The paced load's ops/s is labelled the pace, not the drive's best.
    assert!(
        md.contains("**Paced cells** (marked \u{25ca} wherever their throughput is shown): load (target 2,496 ops/s)."),
        "{md}"
    );
    // Its throughput table's row (the load's own thread count) is marked.
    let load = &md[md.find("load: throughput (ops/s) vs #Threads").unwrap()..];
    let row = load.lines().find(|l| l.starts_with("| 32 |")).unwrap();
    assert!(row.contains("\u{25ca}"), "{load}");
    // The corners are `mine`'s (its drive), not a configuration of their own.
    let corners = &md[md.find("\n## Device: 4 corners\n").unwrap()..];
    assert!(corners.contains("| corner | mine |"), "{corners}");
    for kind in [
        "sequential read",
        "sequential write",
        "random read",
        "random write",
    ] {
        let row = corners
            .lines()
            .find(|l| l.to_lowercase().contains(kind))
            .unwrap_or_else(|| panic!("no {kind} corner: {corners}"));
        assert!(row.contains("MB/s") || row.contains("IOPS"), "{row}");
    }
    assert!(!md.contains("| corners |"), "{md}");
}
