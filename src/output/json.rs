//! Outputs as JSON documents.

use serde::Serialize;

/// Any output as pretty JSON with a trailing newline.
pub fn to_pretty(report: &impl Serialize) -> String {
    let mut text = serde_json::to_string_pretty(report).expect("a report always serializes");
    text.push('\n');
    text
}

/// Whether `head` (a file's first bytes) starts a step output as
/// [`to_pretty`] writes one: an object whose first key is `kvperf_step`.
pub fn is_step_output(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let rest = text.trim_start();
    rest.strip_prefix('{')
        .is_some_and(|r| r.trim_start().starts_with("\"kvperf_step\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_a_step_output_by_its_first_key() {
        assert!(is_step_output(b"{\n  \"kvperf_step\": 2,\n"));
        assert!(!is_step_output(b"{\"name\": \"my notes\"}"));
        assert!(!is_step_output(b"[OVERALL], RunTime(ms), 10"));
    }
}
