//! Percentiles that mean little. kvperf's histograms take a percentile by
//! nearest rank: the value at rank ceil(q x n) of the n operations in
//! order (at least rank 1), so percentile q of fewer than 1 / (1 - q)
//! operations is their maximum (p99 under 100, p99.9 under 1,000). Judged
//! once here; the step warns, the JSON result lists them per latency
//! (`too_few_for`) and reports mark them (docs/semantics.md,
//! "Percentiles: nearest rank").

/// The fewest operations from which percentile `q` (a fraction) is more
/// than their maximum: 1 / (1 - q), rounded (p99: 100, p99.9: 1,000).
pub fn needed(q: f64) -> u64 {
    if !(q > 0.0 && q < 1.0) {
        return 1;
    }
    (1.0 / (1.0 - q)).round() as u64
}

/// Whether `count` operations are too few for percentile `q`.
pub fn too_few(count: u64, q: f64) -> bool {
    count < needed(q)
}

/// "p99.9" for 0.999.
pub fn name(q: f64) -> String {
    let pct = format!("{:.4}", q * 100.0);
    format!("p{}", pct.trim_end_matches('0').trim_end_matches('.'))
}

/// Of `percentiles` (fractions), the names of those that `count`
/// operations are too few for; none for no operations (nothing printed).
pub fn too_few_for(count: u64, percentiles: &[f64]) -> Vec<String> {
    percentiles
        .iter()
        .filter(|q| count > 0 && too_few(count, **q))
        .map(|q| name(*q))
        .collect()
}

/// The step's warning over its operation types (name, successful
/// operations), for the percentiles its output prints; `lengthen` names
/// the settings that give more operations, in the mode's words.
pub fn warning(ops: &[(String, u64)], percentiles: &[f64], lengthen: &str) -> Option<String> {
    let said: Vec<String> = ops
        .iter()
        .filter_map(|(op, count)| {
            let thin: Vec<f64> = percentiles
                .iter()
                .copied()
                .filter(|q| *count > 0 && too_few(*count, *q))
                .collect();
            (!thin.is_empty()).then(|| {
                let needs: Vec<String> = thin
                    .iter()
                    .map(|q| format!("{} needs {}", name(*q), grouped(needed(*q))))
                    .collect();
                format!(
                    "{op} from {} operations: {}",
                    grouped(*count),
                    needs.join(", ")
                )
            })
        })
        .collect();
    (!said.is_empty()).then(|| {
        format!(
            "percentiles from too few operations to mean much: {}; by nearest rank, percentile q \
             of fewer than 1/(1-q) operations is their maximum; raise {lengthen} before quoting them",
            said.join("; ")
        )
    })
}

/// 10000 as "10,000".
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_percentile_needs_one_over_one_minus_q_operations() {
        assert_eq!(
            [0.5, 0.95, 0.99, 0.999, 0.9999].map(needed),
            [2, 20, 100, 1000, 10_000]
        );
        assert!(too_few(99, 0.99) && !too_few(100, 0.99));
        assert!(too_few(962, 0.999) && !too_few(1000, 0.999));
        assert_eq!(name(0.999), "p99.9");
        assert_eq!(name(0.99), "p99");
        assert_eq!(name(0.5), "p50");
        assert_eq!(too_few_for(962, &[0.5, 0.99, 0.999]), ["p99.9"]);
        assert!(
            too_few_for(0, &[0.999]).is_empty(),
            "no operations, no figure"
        );
    }

    #[test]
    fn the_rule_is_the_histograms_own_nearest_rank() {
        // Under 1/(1-q) operations the percentile is the maximum; from it on, not.
        for (n, q) in [(99u64, 0.99), (100, 0.99), (999, 0.999), (1000, 0.999)] {
            let mut h = crate::measure::new_histogram();
            for v in 1..=n {
                h.record(v * 1000).unwrap();
            }
            let at = h.value_at_quantile(q);
            assert_eq!(
                h.equivalent(at, h.max()),
                too_few(n, q),
                "{n} operations, q {q}: {at} vs max {}",
                h.max()
            );
        }
    }

    #[test]
    fn the_warning_names_each_type_and_what_it_needs() {
        let ops = [("READ".to_string(), 962), ("UPDATE".to_string(), 50_000)];
        let w = warning(&ops, &[0.99, 0.999], "operationcount").unwrap();
        assert!(
            w.starts_with(
                "percentiles from too few operations to mean much: READ from 962 operations: p99.9 needs 1,000; by nearest rank"
            ),
            "{w}"
        );
        assert!(
            w.ends_with("raise operationcount before quoting them"),
            "{w}"
        );
        assert_eq!(warning(&ops[1..], &[0.99, 0.999], "x"), None);
    }
}
