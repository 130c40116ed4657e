//! `plan run --set KEY=VALUE`: change any value of a plan without editing
//! the file. KEY is a dotted path into the plan's TOML:
//!
//! - `engine`, `drop_caches`, `settle`... (top-level keys);
//! - `properties.recordcount` (a bare unknown name such as `recordcount`
//!   means the same);
//! - `configs.NAME.db`, `configs.NAME.properties.KEY` (a config by name);
//! - `steps.N.threads` (the N-th `[[steps]]`, from 0), `steps.*.threads`
//!   (every entry), and `threads`, `operations`, `duration`, `repeats` as
//!   shorthands for every measured (non-load) entry, `clients` for every
//!   entry, the load's included (the load is sharded like the runs);
//! - `launcher` (the plan's: `local`, `srun` or `kubernetes`), and
//!   `kubernetes.image`, `kubernetes.namespace`... (its `[kubernetes]`).
//!
//! VALUE is read as TOML (`1000`, `[1, 2, 4]`, `true`, `"text"`), else
//! taken as text. The plan is validated after the changes, so a bad value
//! gets the same one-line error as in the file.

use toml::Value;

/// Top-level keys of a plan; any other bare key is a property.
const PLAN_KEYS: [&str; 16] = [
    "name",
    "launcher",
    "kubernetes",
    "description",
    "notes",
    "min_duration",
    "device",
    "report",
    "driver",
    "engine",
    "drop_caches",
    "settle",
    "properties",
    "precondition",
    "configs",
    "steps",
];

/// Keys of a `[[steps]]` entry that the shorthands reach.
const STEP_SHORTHANDS: [&str; 4] = ["threads", "operations", "duration", "repeats"];

/// Keys of a `[[steps]]` entry that a shorthand sets in every entry.
const EVERY_STEP_SHORTHANDS: [&str; 1] = ["clients"];

/// Applies `KEY=VALUE` to the plan's TOML tree.
pub fn apply(plan: &mut Value, assignment: &str) -> Result<(), String> {
    let (key, text) = assignment
        .split_once('=')
        .filter(|(k, _)| !k.trim().is_empty())
        .ok_or_else(|| format!("--set expects KEY=VALUE, got '{assignment}'"))?;
    let value = parse_value(text.trim());
    let path: Vec<&str> = key.trim().split('.').collect();
    if path.len() == 1 && STEP_SHORTHANDS.contains(&path[0]) {
        return set_in_steps(plan, path[0], &value, true);
    }
    if path.len() == 1 && EVERY_STEP_SHORTHANDS.contains(&path[0]) {
        return set_in_steps(plan, path[0], &value, false);
    }
    if !PLAN_KEYS.contains(&path[0]) {
        // A property; its name may hold dots (`<engine>.<option>`).
        return set_path(plan, &["properties", key.trim()], value, key);
    }
    if let ["steps", "*", rest @ ..] = path.as_slice() {
        return match rest {
            [field] => set_in_steps(plan, field, &value, false),
            _ => Err(format!("--set {key}: steps.*.FIELD takes one field name")),
        };
    }
    // Property names hold dots: after `properties`, the rest is one key.
    let path: Vec<String> = match path.iter().position(|p| *p == "properties") {
        Some(i) if i + 1 < path.len() => path[..=i]
            .iter()
            .map(|p| p.to_string())
            .chain([path[i + 1..].join(".")])
            .collect(),
        _ => path.iter().map(|p| p.to_string()).collect(),
    };
    let path: Vec<&str> = path.iter().map(String::as_str).collect();
    set_path(plan, &path, value, key)
}

/// Refuses a `--set` key that is one typo away from a name kvperf knows
/// (a plan key, a shorthand, or one of `known_properties`) without being
/// it: `recordcont` is a mistake, not a property for the engine. A name
/// near nothing is a property, passed on as YCSB does.
pub fn check_name(assignment: &str, known_properties: &[&str]) -> Result<(), String> {
    let key = assignment
        .split_once('=')
        .map_or(assignment, |(k, _)| k)
        .trim();
    let path: Vec<&str> = key.split('.').collect();
    let name = match path.iter().position(|p| *p == "properties") {
        Some(i) if i + 1 < path.len() => path[i + 1..].join("."),
        _ if path.len() == 1 => key.to_string(),
        _ => return Ok(()),
    };
    let plan_names = || {
        PLAN_KEYS
            .iter()
            .chain(&STEP_SHORTHANDS)
            .chain(&EVERY_STEP_SHORTHANDS)
    };
    let bare = path.len() == 1;
    let candidates: Vec<&str> = known_properties
        .iter()
        .chain(plan_names().filter(|_| bare))
        .copied()
        .collect();
    if candidates.contains(&name.as_str()) {
        return Ok(());
    }
    // Two edits turn a short word into another word (db_bench's `num` is
    // not a typo of `name`): short names must be one edit away.
    match crate::error::did_you_mean(&name, candidates.iter().copied()) {
        Some(near) if name.len() > 4 || strsim::levenshtein(&name, near) == 1 => {
            Err(format!("unknown setting '{name}': did you mean '{near}'?"))
        }
        _ => Ok(()),
    }
}

/// The property a `--set` gives its value to, named as in a step's
/// properties (`operations` is `ops_key`, `duration` is `duration_key`):
/// a value written on the command line is not scaled by `--scale`.
pub fn property_set(assignment: &str, ops_key: &str, duration_key: &str) -> Option<String> {
    let key = assignment.split_once('=')?.0.trim();
    let path: Vec<&str> = key.split('.').collect();
    let shorthand = |field: &str| match field {
        "operations" => Some(ops_key.to_string()),
        "duration" => Some(duration_key.to_string()),
        _ => None,
    };
    if let Some(i) = path.iter().position(|p| *p == "properties") {
        return (i + 1 < path.len()).then(|| path[i + 1..].join("."));
    }
    match path.as_slice() {
        [one] if STEP_SHORTHANDS.contains(one) => shorthand(one),
        [one] if !PLAN_KEYS.contains(one) && !EVERY_STEP_SHORTHANDS.contains(one) => {
            Some(key.to_string())
        }
        ["steps", _, field] => shorthand(field),
        _ => None,
    }
}

fn parse_value(text: &str) -> Value {
    // A lone value parses as the right-hand side of a TOML assignment.
    toml::from_str::<toml::Table>(&format!("v = {text}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| Value::String(text.to_string()))
}

fn set_in_steps(
    plan: &mut Value,
    field: &str,
    value: &Value,
    measured_only: bool,
) -> Result<(), String> {
    let steps = plan
        .get_mut("steps")
        .and_then(Value::as_array_mut)
        .ok_or("--set: the plan has no [[steps]]")?;
    let mut changed = 0;
    for step in steps.iter_mut().filter_map(Value::as_table_mut) {
        let is_load = step.get("load").and_then(Value::as_bool).unwrap_or(false);
        if measured_only && is_load {
            continue;
        }
        step.insert(field.to_string(), value.clone());
        changed += 1;
    }
    if changed == 0 {
        return Err(format!(
            "--set {field}: the plan has no measured step to change"
        ));
    }
    Ok(())
}

/// Walks `path` (creating tables on the way) and sets the last key;
/// `configs.NAME` picks the config by name, `steps.N` by position.
fn set_path(plan: &mut Value, path: &[&str], value: Value, shown: &str) -> Result<(), String> {
    let mut node = plan;
    for (i, part) in path.iter().enumerate() {
        let last = i + 1 == path.len();
        node = match node {
            Value::Array(items) => {
                let picked = match path.get(i.wrapping_sub(1)) {
                    Some(&"configs") => items
                        .iter()
                        .position(|c| c.get("name").and_then(Value::as_str) == Some(part))
                        .ok_or_else(|| format!("--set {shown}: the plan has no config '{part}'"))?,
                    _ => part
                        .parse::<usize>()
                        .ok()
                        .filter(|n| *n < items.len())
                        .ok_or_else(|| {
                            format!(
                                "--set {shown}: '{part}' is not one of the {} entries (0 to {})",
                                items.len(),
                                items.len().saturating_sub(1)
                            )
                        })?,
                };
                if last {
                    return Err(format!("--set {shown}: give a field of the entry to set"));
                }
                &mut items[picked]
            }
            Value::Table(table) => {
                if last {
                    table.insert(part.to_string(), value);
                    return Ok(());
                }
                table
                    .entry(part.to_string())
                    .or_insert_with(|| Value::Table(toml::Table::new()))
            }
            _ => {
                return Err(format!(
                    "--set {shown}: '{part}' is inside a value, not a table"
                ))
            }
        };
    }
    Err(format!("--set {shown}: empty key"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = r#"
name = "t"
driver = "ycsb"
[properties]
recordcount = 1000
[[configs]]
name = "disk"
db = "/a"
[[steps]]
load = true
workloads = ["a"]
threads = [8]
[[steps]]
workloads = ["a"]
threads = [1, 2]
"#;

    fn plan() -> Value {
        toml::from_str(PLAN).unwrap()
    }

    #[test]
    fn paths_shorthands_and_values() {
        let mut p = plan();
        apply(&mut p, "recordcount=50").unwrap();
        apply(&mut p, "threads=[4, 16]").unwrap();
        apply(&mut p, "configs.disk.db=/mnt/nvme/kv").unwrap();
        apply(&mut p, "steps.0.threads=[2]").unwrap();
        apply(&mut p, "drop_caches=true").unwrap();
        apply(&mut p, "properties.rocksdb.compression=lz4").unwrap();
        apply(&mut p, "rocksdb.block_size=8192").unwrap();
        apply(&mut p, "configs.disk.properties.fieldcount=4").unwrap();
        assert_eq!(p["properties"]["recordcount"].as_integer(), Some(50));
        let threads = |i: usize| p["steps"][i]["threads"].as_array().unwrap().len();
        assert_eq!((threads(0), threads(1)), (1, 2));
        assert_eq!(p["steps"][1]["threads"][1].as_integer(), Some(16));
        assert_eq!(p["configs"][0]["db"].as_str(), Some("/mnt/nvme/kv"));
        assert_eq!(p["drop_caches"].as_bool(), Some(true));
        assert_eq!(p["properties"]["rocksdb.compression"].as_str(), Some("lz4"));
        assert_eq!(
            p["properties"]["rocksdb.block_size"].as_integer(),
            Some(8192)
        );
        assert_eq!(
            p["configs"][0]["properties"]["fieldcount"].as_integer(),
            Some(4)
        );
    }

    #[test]
    fn clients_reach_every_entry_and_launcher_is_the_plans() {
        let mut p = plan();
        apply(&mut p, "clients=2").unwrap();
        apply(&mut p, "launcher=srun").unwrap();
        assert_eq!(
            p["steps"][0]["clients"].as_integer(),
            Some(2),
            "the load too"
        );
        assert_eq!(p["steps"][1]["clients"].as_integer(), Some(2));
        assert_eq!(p["launcher"].as_str(), Some("srun"));
        assert!(p.get("properties").unwrap().get("launcher").is_none());
        // Every top-level key of a plan is the plan's, not a property.
        apply(&mut p, "min_duration=5").unwrap();
        apply(&mut p, "device.runtime=30").unwrap();
        apply(&mut p, "report.improvements=ratio").unwrap();
        assert_eq!(p["min_duration"].as_integer(), Some(5));
        assert_eq!(p["device"]["runtime"].as_integer(), Some(30));
        assert_eq!(p["report"]["improvements"].as_str(), Some("ratio"));
        let properties = p.get("properties").unwrap();
        for key in ["min_duration", "device.runtime", "report.improvements"] {
            assert!(properties.get(key).is_none(), "{key} became a property");
        }
    }

    #[test]
    fn typos_get_a_did_you_mean_and_other_names_pass() {
        let known = ["recordcount", "operationcount", "fieldlength"];
        let err = check_name("recordcont=10", &known).unwrap_err();
        assert_eq!(
            err,
            "unknown setting 'recordcont': did you mean 'recordcount'?"
        );
        let err = check_name("properties.fieldlenght=10", &known).unwrap_err();
        assert!(err.contains("did you mean 'fieldlength'"), "{err}");
        let err = check_name("thread=[2]", &known).unwrap_err();
        assert!(err.contains("did you mean 'threads'"), "{err}");
        for fine in [
            "num=1000",
            "recordcount=1",
            "threads=[2]",
            "rocksdb.block_size=8192",
            "mybinding.option=1",
            "configs.disk.db=/x",
        ] {
            check_name(fine, &known).unwrap();
        }
    }

    #[test]
    fn properties_set_on_the_command_line_are_named() {
        let named = |a: &str| property_set(a, "operationcount", "maxexecutiontime");
        assert_eq!(named("recordcount=5").as_deref(), Some("recordcount"));
        assert_eq!(
            named("properties.recordcount=5").as_deref(),
            Some("recordcount")
        );
        assert_eq!(
            named("configs.disk.properties.insertcount=5").as_deref(),
            Some("insertcount")
        );
        assert_eq!(named("operations=5").as_deref(), Some("operationcount"));
        assert_eq!(
            named("steps.1.duration=5").as_deref(),
            Some("maxexecutiontime")
        );
        assert_eq!(named("threads=[1]"), None);
        assert_eq!(named("drop_caches=true"), None);
    }

    #[test]
    fn mistakes_are_named() {
        let mut p = plan();
        assert!(apply(&mut p, "recordcount")
            .unwrap_err()
            .contains("KEY=VALUE"));
        assert!(apply(&mut p, "configs.ssd.db=/x")
            .unwrap_err()
            .contains("no config 'ssd'"));
        assert!(apply(&mut p, "steps.7.threads=[1]")
            .unwrap_err()
            .contains("not one of the 2 entries"));
    }
}
