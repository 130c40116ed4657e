//! Byte sizes as plans write them: `1000000`, `"64MiB"`, `"1.5TB"`.

/// Parses a byte count with an optional SI (kB, MB, GB, TB) or binary
/// (KiB, MiB, GiB, TiB) suffix.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a size (e.g. 1000000, \"64MiB\", \"1TB\")"))?;
    let multiplier: u64 = match unit.trim() {
        "" | "B" => 1,
        "kB" | "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "TiB" => 1 << 40,
        other => {
            return Err(format!(
                "'{text}': unknown unit '{other}' (use kB, MB, GB, TB, KiB, MiB, GiB, TiB)"
            ))
        }
    };
    Ok((value * multiplier as f64).round() as u64)
}

/// `bytes` in SI units as the briefs write them ("2.0 TB", "200 MB").
pub fn format_size(bytes: u64) -> String {
    let units = [(1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")];
    let b = bytes as f64;
    match units.iter().find(|(scale, _)| b >= *scale) {
        Some((scale, unit)) if b / scale < 10.0 => format!("{:.1} {unit}", b / scale),
        Some((scale, unit)) => format!("{:.0} {unit}", b / scale),
        None => format!("{bytes} B"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_format_as_briefs_write_them() {
        assert_eq!(format_size(2_000_000_000_000), "2.0 TB");
        assert_eq!(format_size(200_000_000), "200 MB");
        assert_eq!(format_size(999), "999 B");
    }

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("1000").unwrap(), 1000);
        assert_eq!(parse_size("64MiB").unwrap(), 64 << 20);
        assert_eq!(parse_size("1.5 TB").unwrap(), 1_500_000_000_000);
        assert!(parse_size("12 parsecs")
            .unwrap_err()
            .contains("unknown unit"));
        assert!(parse_size("lots").is_err());
    }
}
