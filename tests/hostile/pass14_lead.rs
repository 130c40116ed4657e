//! The fourteenth hostile pass, the lead's part (docs/reliability.md,
//! "Pass 14"): what a watching plan tells its steps, taken from a user's
//! environment. Fails on 12bf451.

use std::process::Command;

/// Pass 14: `KVPERF_LIVE_DIR`, the variable a watching `plan run` gives
/// its steps, left in a user's shell: `run`, `load` and `bench` replaced
/// the user's `DIR/<pid>.json` with their figures at every interval, then
/// removed it, exit 0. Now a step mirrors only into the directory its
/// parent plan made: one warning, the user's file whole.
#[test]
fn a_live_dir_in_a_users_environment_is_no_plans() {
    let dir = tempfile::tempdir().unwrap();
    let exe = env!("CARGO_BIN_EXE_kvperf");
    let workload = crate::common::workload("a");
    let steps = [
        format!(
            "run --engine null -P {workload} -p operationcount=100000000 -p maxexecutiontime=2"
        ),
        format!("load --engine null -P {workload} -p recordcount=100000000 -p maxexecutiontime=2"),
        "bench --engine null --benchmarks=fillrandom --num=100000000 --duration=2".to_string(),
    ];
    for (i, step) in steps.iter().enumerate() {
        let user = dir.path().join(format!("u{i}"));
        std::fs::create_dir(&user).unwrap();
        // The step's pid is the shell's ($$): `exec` keeps it.
        let script = format!(
            "echo mine > u{i}/$$.json; echo $$ > pid; exec env KVPERF_LIVE_DIR=\"$PWD/u{i}\" {exe} {step} >/dev/null"
        );
        let out = Command::new("sh")
            .args(["-c", &script])
            .current_dir(dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{step}: {stderr}");
        let pid = std::fs::read_to_string(dir.path().join("pid")).unwrap();
        let mine = user.join(format!("{}.json", pid.trim()));
        assert_eq!(
            std::fs::read_to_string(&mine).ok().as_deref(),
            Some("mine\n"),
            "{step}: {stderr}"
        );
        assert!(
            stderr.contains("is not the directory of a plan run watching this step"),
            "{step}: {stderr}"
        );
        let names: Vec<_> = std::fs::read_dir(&user).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "{step}: only the user's file");
    }
}
