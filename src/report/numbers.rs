//! How a count, a rate or a CSV cell is written: below the report's
//! modules that format (format.rs, csv.rs, energy.rs) and those that only
//! hold figures (model.rs).

/// 12345.6 -> "12,346".
pub fn ops(v: f64) -> String {
    let digits = format!("{:.0}", v.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `text` as one CSV cell: quoted when it holds a comma, a quote or a
/// newline (quotes doubled), as RFC 4180 has it.
pub fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}
