//! Byte sizes as plans write them: `1000000`, `"64MiB"`, `"1.5TB"`, `"2G"`
//! (parsed by [`crate::units`]), and as reports print them.

pub use crate::units::parse_size;

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
}
