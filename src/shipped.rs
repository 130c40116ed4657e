//! The workloads and plans shipped in the repository, built into the
//! binary so that `-P workloada` and `kvperf plan run seed-004` work from
//! any directory. A real file of that name in the current directory wins.

use std::path::Path;

/// YCSB's core workloads, `workloads/workload[a-f]`, by file name.
pub const WORKLOADS: [(&str, &str); 6] = [
    ("workloada", include_str!("../workloads/workloada")),
    ("workloadb", include_str!("../workloads/workloadb")),
    ("workloadc", include_str!("../workloads/workloadc")),
    ("workloadd", include_str!("../workloads/workloadd")),
    ("workloade", include_str!("../workloads/workloade")),
    ("workloadf", include_str!("../workloads/workloadf")),
];

/// The plans of `plans/`, by file name without `.toml`.
pub const PLANS: [(&str, &str); 9] = [
    ("quickstart", include_str!("../plans/quickstart.toml")),
    ("smoke", include_str!("../plans/smoke.toml")),
    (
        "rocksdb-releases",
        include_str!("../plans/rocksdb-releases.toml"),
    ),
    (
        "seed-000-rocksdb-ycsb",
        include_str!("../plans/seed-000-rocksdb-ycsb.toml"),
    ),
    (
        "seed-001-rocksdb-dbbench",
        include_str!("../plans/seed-001-rocksdb-dbbench.toml"),
    ),
    (
        "seed-002-engines",
        include_str!("../plans/seed-002-engines.toml"),
    ),
    (
        "seed-002-mongodb-wire",
        include_str!("../plans/seed-002-mongodb-wire.toml"),
    ),
    (
        "seed-003-rocksdb-dbbench",
        include_str!("../plans/seed-003-rocksdb-dbbench.toml"),
    ),
    (
        "seed-004-cassandra-ycsb",
        include_str!("../plans/seed-004-cassandra-ycsb.toml"),
    ),
];

/// The name `given` stands for once a leading `DIR/` and a `SUFFIX` are
/// taken off, when it is written as a shipped file would be
/// (`workloada`, `workloads/workloada`, `plans/seed-000.toml`).
fn bare<'a>(given: &'a Path, dir: &str, suffix: &str) -> Option<&'a str> {
    let text = given.to_str()?;
    let text = text.strip_prefix(&format!("{dir}/")).unwrap_or(text);
    let text = text.strip_suffix(suffix).unwrap_or(text);
    (!text.is_empty() && !text.contains('/')).then_some(text)
}

/// The shipped workload `given` names, when no file `given` exists.
pub fn workload(given: &Path) -> Option<&'static str> {
    if given.exists() {
        return None;
    }
    named_workload(given)
}

/// The shipped workload `given` is written as, file or not.
pub fn named_workload(given: &Path) -> Option<&'static str> {
    let name = bare(given, "workloads", "")?;
    WORKLOADS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
}

/// What a plan argument that is not a file names among the shipped plans.
#[derive(Debug, PartialEq, Eq)]
pub enum PlanMatch {
    /// One plan: its name and text.
    One(&'static str, &'static str),
    /// A prefix of several (`seed-002`): their names.
    Several(Vec<&'static str>),
    None,
}

/// The shipped plan `given` names: its whole name (`seed-004-cassandra-ycsb`,
/// with or without `plans/` and `.toml`) or the start of one that ends
/// before a `-` (`seed-004`).
pub fn plan(given: &Path) -> PlanMatch {
    let Some(name) = bare(given, "plans", ".toml") else {
        return PlanMatch::None;
    };
    if let Some((n, text)) = PLANS.iter().find(|(n, _)| *n == name) {
        return PlanMatch::One(n, text);
    }
    let prefix = format!("{name}-");
    let starts: Vec<&(&str, &str)> = PLANS
        .iter()
        .filter(|(n, _)| n.starts_with(&prefix))
        .collect();
    match starts.as_slice() {
        [] => PlanMatch::None,
        [(n, text)] => PlanMatch::One(n, text),
        more => PlanMatch::Several(more.iter().map(|(n, _)| *n).collect()),
    }
}

/// The shipped plans' names, for the line that refuses an unknown one.
pub fn plan_names() -> String {
    PLANS.map(|(n, _)| n).join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workloads_are_found_by_file_name_when_absent() {
        // The crate's root holds workloads/, not a file named workloada.
        let a = workload(Path::new("workloada")).unwrap();
        assert!(a.contains("readproportion=0.5"), "{a}");
        assert_eq!(
            workload(Path::new("workloads/workloadf")),
            None,
            "the file wins"
        );
        assert!(named_workload(Path::new("workloads/workloadf")).is_some());
        assert_eq!(named_workload(Path::new("workloadg")), None);
        assert_eq!(named_workload(Path::new("other/workloada")), None);
    }

    #[test]
    fn plans_are_found_by_name_prefix_or_path() {
        let name = |m: PlanMatch| match m {
            PlanMatch::One(n, _) => n,
            other => panic!("{other:?}"),
        };
        assert_eq!(name(plan(Path::new("seed-004"))), "seed-004-cassandra-ycsb");
        assert_eq!(
            name(plan(Path::new("plans/seed-000-rocksdb-ycsb.toml"))),
            "seed-000-rocksdb-ycsb"
        );
        assert_eq!(name(plan(Path::new("quickstart"))), "quickstart");
        assert_eq!(
            plan(Path::new("seed-002")),
            PlanMatch::Several(vec!["seed-002-engines", "seed-002-mongodb-wire"])
        );
        assert_eq!(plan(Path::new("seed-00")), PlanMatch::None);
        assert_eq!(
            plan(Path::new("elsewhere/quickstart.toml")),
            PlanMatch::None
        );
    }

    #[test]
    fn every_shipped_plan_parses() {
        for (name, text) in PLANS {
            crate::plan::parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
}
