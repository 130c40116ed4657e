//! How a count or a rate is written: below the report's modules that
//! format (format.rs) and those that only hold figures (model.rs).

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
