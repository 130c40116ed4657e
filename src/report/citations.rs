//! Where a section of the report follows a table of a brief. The report
//! cites a brief only when the plan names it (`[report] brief`) and only
//! the sections that brief has: a study of one's own drive reads about
//! its own figures, not about "seed 004's Table 8".

use super::model::Study;

/// A part of the report that some brief also has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// Each configuration at its best thread count, with its latencies.
    BestThreads,
    /// The first configuration's advantage, each at its own peak.
    AdvantageAtPeaks,
    /// Throughput, p99.9 and amplification side by side at each peak.
    TailsAndAmplification,
    /// Improvements written as ratios ("3.0x").
    RatioVoice,
    /// Improvements written as percentages ("+44%", "51% lower").
    PercentVoice,
    /// The largest per-thread-count p99 improvement and where it was.
    LargestP99,
}

/// The briefs shipped with kvperf, and where each section is in them.
const SOURCES: &[(&str, Section, &str)] = &[
    (
        "seed 004",
        Section::BestThreads,
        "Table 8 and the detail tables",
    ),
    ("seed 004", Section::AdvantageAtPeaks, "Tables 1-5"),
    ("seed 004", Section::RatioVoice, "figures"),
    ("seed 002", Section::TailsAndAmplification, "figures"),
    ("seed 001", Section::PercentVoice, "figures"),
    ("seed 001", Section::LargestP99, "figures"),
    ("seed 003", Section::LargestP99, "figures"),
];

/// " (as seed 004's Table 8 and the detail tables)" when the study's plan
/// reproduces a brief with this section; empty otherwise.
pub fn cite(study: &Study, section: Section) -> String {
    let Some(brief) = study.brief.as_deref() else {
        return String::new();
    };
    let named = normalized(brief);
    SOURCES
        .iter()
        .find(|(source, s, _)| *s == section && normalized(source) == named)
        .map_or_else(String::new, |(_, _, place)| {
            format!(" (as {brief}'s {place})")
        })
}

/// "Seed-004", "seed_004" and "SEED 004" name one brief.
fn normalized(name: &str) -> String {
    name.trim().to_lowercase().replace(['-', '_'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn study(brief: Option<&str>) -> Study {
        Study {
            title: String::new(),
            series: Vec::new(),
            hosts: Vec::new(),
            provenance: String::new(),
            size: None,
            about: Vec::new(),
            workloads: Vec::new(),
            devices: Vec::new(),
            db_bench: false,
            ratios: false,
            brief: brief.map(str::to_string),
            how_tested: Vec::new(),
        }
    }

    #[test]
    fn a_plan_naming_no_brief_is_cited_nowhere() {
        for section in [
            Section::BestThreads,
            Section::LargestP99,
            Section::RatioVoice,
        ] {
            assert_eq!(cite(&study(None), section), "");
        }
    }

    #[test]
    fn only_the_named_briefs_sections_are_cited() {
        let s = study(Some("Seed-004"));
        assert_eq!(
            cite(&s, Section::BestThreads),
            " (as Seed-004's Table 8 and the detail tables)"
        );
        // Seed 004 has no tail-latency table; seed 002 does.
        assert_eq!(cite(&s, Section::TailsAndAmplification), "");
        assert_eq!(
            cite(&study(Some("seed 002")), Section::TailsAndAmplification),
            " (as seed 002's figures)"
        );
        // A brief kvperf does not know is named by the plan, never cited.
        assert_eq!(
            cite(&study(Some("Acme X5 brief")), Section::BestThreads),
            ""
        );
    }
}
