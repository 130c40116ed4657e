//! Outputs as JSON documents.

use serde::Serialize;

/// Any output as pretty JSON with a trailing newline.
pub fn to_pretty(report: &impl Serialize) -> String {
    let mut text = serde_json::to_string_pretty(report).expect("a report always serializes");
    text.push('\n');
    text
}
