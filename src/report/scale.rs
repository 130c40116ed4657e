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
        parts.push(dataset_part(d, first.output.host.memory_bytes));
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
