//! The whole [`RunReport`] as one JSON document.

use super::RunReport;

pub fn render(report: &RunReport) -> String {
    let mut text = serde_json::to_string_pretty(report).expect("a report always serializes");
    text.push('\n');
    text
}
