//! How big the study was, in one sentence at the top of a report: the
//! records and their size, the data set against the host's memory, and
//! how long the run steps' measured windows lasted.

use super::numbers::ops;
use crate::results::Record;

/// The sentence, or None when no step says (no engine step).
pub fn sentence(records: &[(String, Record)]) -> Option<String> {
    let engine_steps: Vec<&Record> = records
        .iter()
        .map(|(_, r)| r)
        .filter(|r| matches!(r.output.command.as_str(), "load" | "run" | "bench"))
        .collect();
    let first = engine_steps.first()?;
    let mut parts: Vec<String> = records_part(first).into_iter().collect();
    let dataset = engine_steps
        .iter()
        .flat_map(|r| &r.output.measurements)
        .filter_map(|m| m.accounting.as_ref().map(|a| a.logical.dataset))
        .max()
        .filter(|d| *d > 0);
    if let Some(d) = dataset {
        let mut part = dataset_part(d, first.output.host.memory_bytes);
        if let Some(what) = dataset_contents(&engine_steps, first, d) {
            part.push_str(&format!(": {what}"));
        }
        parts.push(part);
    }
    let windows: Vec<f64> = engine_steps
        .iter()
        .filter(|r| r.output.command != "load")
        .flat_map(|r| &r.output.measurements)
        .map(|m| m.runtime_s)
        .collect();
    if !windows.is_empty() {
        let lo = windows.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = windows.iter().copied().fold(0.0, f64::max);
        parts.push(if hi - lo < 0.05 {
            format!("measured windows of {lo:.1} s")
        } else {
            format!("measured windows of {lo:.1} to {hi:.1} s")
        });
    }
    (!parts.is_empty()).then(|| format!("**Study size**: {}.", parts.join("; ")))
}

/// What the data set figure counts, so that it adds up: "35,022 records
/// (25,000 loaded and 10,022 inserted by Workload D's runs) of 4,120 B
/// (4 x 1,024 B of values and 24 B of field names; keys not counted)".
/// YCSB steps with constant field lengths only; None otherwise.
fn dataset_contents(engine_steps: &[&Record], first: &Record, dataset: u64) -> Option<String> {
    if first.output.command == "bench" {
        return Some("keys and values of every key written".into());
    }
    let s = &first.output.settings;
    let num = |key: &str| s.get(key).and_then(|v| v.trim().parse::<u64>().ok());
    let loaded = num("recordcount")?;
    let fields = num("fieldcount").unwrap_or(10);
    let length = match s.get("fieldlength") {
        None => 100,
        Some(v) => crate::units::parse_size(v).ok()?,
    };
    if s.get("fieldlengthdistribution")
        .is_some_and(|d| d != "constant")
    {
        return None;
    }
    // YCSB's field names: the prefix and the field's number.
    let prefix = s.get("fieldnameprefix").map_or("field", String::as_str);
    let names: u64 = (0..fields)
        .map(|i| (prefix.len() + i.to_string().len()) as u64)
        .sum();
    let record = fields.saturating_mul(length) + names;
    if record == 0 {
        return None;
    }
    let records = (dataset as f64 / record as f64).round() as u64;
    let inserted = records.saturating_sub(loaded);
    let mut inserters: Vec<String> = Vec::new();
    for r in engine_steps.iter().filter(|r| r.output.command != "load") {
        let inserts = r
            .measured()
            .and_then(|m| m.ops.get(&crate::measure::OpKind::Insert))
            .is_some_and(|o| o.latency.count > 0);
        let name = format!("Workload {}", r.step.workload.to_uppercase());
        if inserts && !inserters.contains(&name) {
            inserters.push(name);
        }
    }
    let origin = if inserted > 0 {
        let by = if inserters.is_empty() {
            "the runs".to_string()
        } else {
            format!("{}'s runs", inserters.join(" and "))
        };
        format!(
            " ({} loaded and {} inserted by {by})",
            ops(loaded as f64),
            ops(inserted as f64)
        )
    } else {
        String::new()
    };
    Some(format!(
        "{} records{origin} of {} B ({fields} x {} B of values and {names} B of field names; keys not counted)",
        ops(records as f64),
        ops(record as f64),
        ops(length as f64),
    ))
}

/// The plan's own words for the report's opening: its description and
/// notes. A scaled study's description is the plan's at full scale, so it
/// says so, followed by the sizes this study ran at.
pub fn about(records: &[(String, Record)]) -> Vec<String> {
    let Some((_, first)) = records.first() else {
        return Vec::new();
    };
    let scaled = first.plan.scale != 1.0;
    let mut out = Vec::new();
    let description = first.plan.description.trim();
    if !description.is_empty() {
        out.push(if scaled {
            format!("At full scale: {description}.")
        } else {
            description.to_string()
        });
    }
    if scaled {
        out.extend(as_run(records, first.plan.scale));
    }
    let notes = first.plan.notes.trim();
    if !notes.is_empty() {
        out.push(notes.to_string());
    }
    out
}

/// "As run, at scale 0.0001: 25,000 records; each run step 10 s (its
/// operation count lifted: the time governs); threads 4-256; configuration
/// mine." From the steps' settings, as they ran.
fn as_run(records: &[(String, Record)], scale: f64) -> Option<String> {
    let engine: Vec<&Record> = records
        .iter()
        .map(|(_, r)| r)
        .filter(|r| matches!(r.output.command.as_str(), "load" | "run" | "bench"))
        .collect();
    let first = engine.first()?;
    let bench = first.output.command == "bench";
    let mut parts = Vec::new();
    let number = |r: &Record, key: &str| {
        r.output
            .settings
            .get(key)
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    let seconds = |r: &Record, key: &str| {
        r.output
            .settings
            .get(key)
            .and_then(|v| crate::units::parse_duration(v.trim()).ok())
            .map(|d| d.as_secs())
            .filter(|s| *s > 0)
    };
    let (records_key, ops_key, time_key) = if bench {
        ("num", "reads", "duration")
    } else {
        ("recordcount", "operationcount", "maxexecutiontime")
    };
    if let Some(n) = engine.iter().find_map(|r| number(r, records_key)) {
        parts.push(format!(
            "{} {}",
            ops(n as f64),
            if bench { "keys" } else { "records" }
        ));
    }
    let runs: Vec<&&Record> = engine
        .iter()
        .filter(|r| r.step.kind == "run" || (bench && r.step.kind != "load"))
        .collect();
    let range = |v: &[u64], unit: &str| {
        let lo = v.iter().min().copied().unwrap_or(0);
        let hi = v.iter().max().copied().unwrap_or(0);
        if lo == hi {
            format!("{}{unit}", ops(lo as f64))
        } else {
            format!("{} to {}{unit}", ops(lo as f64), ops(hi as f64))
        }
    };
    let times: Vec<u64> = runs.iter().filter_map(|r| seconds(r, time_key)).collect();
    let counts: Vec<u64> = runs
        .iter()
        .filter_map(|r| number(r, ops_key))
        .filter(|n| *n > 0)
        .collect();
    if !runs.is_empty() {
        parts.push(match (times.len() == runs.len(), counts.is_empty()) {
            (true, true) => format!("each run step {} (the time governs)", range(&times, " s")),
            (true, false) => format!(
                "each run step {} operations{}, at most {}",
                range(&counts, ""),
                if bench { " per thread" } else { "" },
                range(&times, " s")
            ),
            (false, false) => format!(
                "each run step {} operations{}",
                range(&counts, ""),
                if bench { " per thread" } else { "" }
            ),
            (false, true) => "run steps as their workloads say".to_string(),
        });
    }
    let threads: Vec<u64> = engine.iter().map(|r| r.step.threads).collect();
    if !threads.is_empty() {
        parts.push(format!(
            "threads {}",
            range(&threads, "").replace(" to ", "-")
        ));
    }
    let mut configs: Vec<&str> = engine.iter().map(|r| r.step.config.as_str()).collect();
    configs.dedup();
    configs.sort();
    configs.dedup();
    parts.push(format!(
        "{} {}",
        if configs.len() == 1 {
            "configuration"
        } else {
            "configurations"
        },
        configs.join(", ")
    ));
    Some(format!("As run, at scale {scale}: {}.", parts.join("; ")))
}

/// "data set 1.0 GiB, 4.2% of the host's 24.0 GiB of memory (it fits: ...)".
fn dataset_part(dataset: u64, memory: u64) -> String {
    if memory == 0 {
        return format!("data set {}", gib(dataset));
    }
    let share = dataset as f64 / memory as f64;
    format!(
        "data set {}, {} of the host's {} of memory ({})",
        gib(dataset),
        share_text(share),
        gib(memory),
        if share < 1.0 {
            "it fits: reads may come from the page cache"
        } else {
            "larger than memory"
        }
    )
}

/// "1,000 records of 1,000 B (10 fields x 100 B)" (YCSB) or "1,000
/// keys of 16 + 4,096 B" (db_bench), from the step's settings.
fn records_part(r: &Record) -> Option<String> {
    let s = &r.output.settings;
    let num = |key: &str| s.get(key).and_then(|v| v.trim().parse::<u64>().ok());
    if r.output.command == "bench" {
        let keys = num("num")?;
        return Some(match (num("key_size"), num("value_size")) {
            (Some(k), Some(v)) => format!("{} keys of {k} + {} B", ops(keys as f64), ops(v as f64)),
            _ => format!("{} keys", ops(keys as f64)),
        });
    }
    // YCSB's defaults where the step did not set them; no record count, no sentence.
    let records = num("recordcount")?;
    let fields = num("fieldcount").unwrap_or(10);
    let length = match s.get("fieldlength") {
        None => Some(100),
        Some(v) => crate::units::parse_size(v).ok(),
    };
    let constant = s
        .get("fieldlengthdistribution")
        .is_none_or(|d| d == "constant");
    Some(match length {
        Some(length) if constant => format!(
            "{} records of {} B ({fields} fields x {} B)",
            ops(records as f64),
            ops(fields.saturating_mul(length) as f64),
            ops(length as f64)
        ),
        Some(length) => format!(
            "{} records of {fields} fields of up to {} B",
            ops(records as f64),
            ops(length as f64)
        ),
        None => format!("{} records of {fields} fields", ops(records as f64)),
    })
}

fn gib(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.1} GiB", b / (1u64 << 30) as f64)
    } else {
        format!("{:.1} MiB", b / (1u64 << 20) as f64)
    }
}

fn share_text(share: f64) -> String {
    if share >= 0.1 {
        format!("{share:.1}x")
    } else {
        format!("{:.2}%", share * 100.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::OpKind;
    use crate::results::testing;

    #[test]
    fn the_sentence_states_records_and_windows() {
        let mut r = testing::record("a", "c", 4, 1000.0, OpKind::Read, &[1000; 10]);
        r.output
            .settings
            .insert("recordcount".into(), "1000000".into());
        r.output.settings.insert("fieldlength".into(), "1k".into());
        let text = sentence(&[("a".into(), r.clone())]).unwrap();
        assert_eq!(
            text,
            "**Study size**: 1,000,000 records of 10,240 B (10 fields x 1,024 B); measured windows of 10.0 s."
        );
        r.output.settings.remove("recordcount");
        assert_eq!(
            sentence(&[("a".into(), r)]),
            Some("**Study size**: measured windows of 10.0 s.".into())
        );
    }

    #[test]
    fn the_data_set_is_set_against_memory() {
        assert_eq!(
            dataset_part(1 << 30, 24 << 30),
            "data set 1.0 GiB, 4.17% of the host's 24.0 GiB of memory (it fits: reads may come from the page cache)"
        );
        assert!(dataset_part(48 << 30, 24 << 30)
            .contains("2.0x of the host's 24.0 GiB of memory (larger than memory)"));
        assert_eq!(dataset_part(5 << 20, 0), "data set 5.0 MiB");
    }
}
