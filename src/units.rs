//! Sizes and durations as users of fio, db_bench and YCSB type them: the
//! one parser behind every flag, property and plan field that takes bytes
//! or time, so `--size 2G`, `-p fieldlength=1k`, `--runtime 1m` and
//! `-p maxexecutiontime=10s` mean the same wherever they are written.
//!
//! Sizes: a number (decimals allowed) and an optional unit, any case.
//! fio's one-letter units `k`, `m`, `g`, `t`, `p` are powers of 1024, as in
//! fio's default (`kb_base=1024`): `2G` is 2 GiB. `KiB`..`PiB` are powers
//! of 1024 too. The SI spellings `kB`, `MB`, `GB`, `TB`, `PB` are powers
//! of 1000, as the briefs write them ("2 TB"); fio would read them as
//! powers of 1024 unless `kb_base=1000` (docs/semantics.md).
//!
//! Durations: a number of seconds (decimals allowed), or a number with
//! `us`, `ms`, `s`, `m` (minutes), `h` or `d`, fio's time units.

use std::time::Duration;

/// Bytes of `text`: `4096`, `4k`, `1.5G`, `64MiB`, `1TB`.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let (value, unit) = split_number(text)
        .ok_or_else(|| format!("'{text}' is not a size (e.g. 4096, 4k, 2G, 64MiB, 1.5TB)"))?;
    let binary = |power: i32| 1024f64.powi(power);
    let decimal = |power: i32| 1000f64.powi(power);
    let multiplier = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => binary(1),
        "m" | "mib" => binary(2),
        "g" | "gib" => binary(3),
        "t" | "tib" => binary(4),
        "p" | "pib" => binary(5),
        "kb" => decimal(1),
        "mb" => decimal(2),
        "gb" => decimal(3),
        "tb" => decimal(4),
        "pb" => decimal(5),
        _ => {
            return Err(format!(
                "'{text}': unknown unit '{unit}' (use k, m, g, t as fio does (powers of 1024), KiB..TiB, or kB..TB (powers of 1000))"
            ))
        }
    };
    let exact = value * multiplier;
    let bytes = exact.round();
    if bytes >= u64::MAX as f64 {
        return Err(format!("'{text}' is more bytes than kvperf can count"));
    }
    // 1.5k is 1536 bytes; 1.5 or 1.1k is no whole number of bytes.
    if (exact - bytes).abs() > 1e-9 * bytes.max(1.0) {
        return Err(format!("'{text}' is not a whole number of bytes"));
    }
    Ok(bytes as u64)
}

/// The time `text` names: `30` (seconds), `1.5`, `10s`, `500ms`, `1m`, `2h`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let (value, unit) = split_number(text)
        .ok_or_else(|| format!("'{text}' is not a duration (e.g. 30, 1.5, 10s, 500ms, 1m, 2h)"))?;
    let seconds = match unit.to_ascii_lowercase().as_str() {
        "" | "s" | "sec" => 1.0,
        "us" => 1e-6,
        "ms" => 1e-3,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "d" => 86_400.0,
        _ => {
            return Err(format!(
            "'{text}': unknown unit '{unit}' (use us, ms, s, m, h or d; a bare number is seconds)"
        ))
        }
    };
    Duration::try_from_secs_f64(value * seconds)
        .map_err(|_| format!("'{text}' is longer than kvperf can count"))
}

/// A clap value parser of a size of at most `max` bytes (and at least `min`).
pub fn size_arg(min: u64, max: u64) -> impl Fn(&str) -> Result<u64, String> + Clone {
    move |text| {
        let bytes = parse_size(text)?;
        if bytes < min || bytes > max {
            return Err(format!("{bytes} bytes is not in {min}..={max}"));
        }
        Ok(bytes)
    }
}

/// A clap value parser of a duration from `min` to `max` seconds.
pub fn duration_arg(min: u64, max: u64) -> impl Fn(&str) -> Result<Duration, String> + Clone {
    move |text| {
        let duration = parse_duration(text)?;
        if duration < Duration::from_secs(min) || duration > Duration::from_secs(max) {
            return Err(format!("'{text}' is not from {min} to {max} seconds"));
        }
        Ok(duration)
    }
}

/// The number and the unit after it; `None` when there is no number, or
/// it is negative or not finite. `_` separates digits, as in counts.
fn split_number(text: &str) -> Option<(f64, &str)> {
    let t = text.trim();
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(end);
    let number: String = number.chars().filter(|&c| c != '_').collect();
    let value: f64 = number.parse().ok()?;
    value.is_finite().then_some((value, unit.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_fio_forms_as_fio_does() {
        assert_eq!(parse_size("2G").unwrap(), 2 << 30);
        assert_eq!(parse_size("2g").unwrap(), 2 << 30);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("64m").unwrap(), 64 << 20);
        assert_eq!(parse_size("1.5G").unwrap(), 3 << 29);
        assert_eq!(parse_size("1t").unwrap(), 1 << 40);
        assert_eq!(parse_size("1_000").unwrap(), 1000);
        assert_eq!(parse_size("512").unwrap(), 512);
        assert_eq!(parse_size("512B").unwrap(), 512);
    }

    #[test]
    fn sizes_keep_their_iec_and_si_units() {
        assert_eq!(parse_size("64MiB").unwrap(), 64 << 20);
        assert_eq!(parse_size("1GiB").unwrap(), 1 << 30);
        assert_eq!(parse_size("1.5 TB").unwrap(), 1_500_000_000_000);
        assert_eq!(parse_size("4kB").unwrap(), 4000);
        assert_eq!(parse_size("4KB").unwrap(), 4000);
    }

    #[test]
    fn bad_sizes_are_named() {
        assert!(parse_size("12 parsecs")
            .unwrap_err()
            .contains("unknown unit 'parsecs'"));
        assert!(parse_size("lots").unwrap_err().contains("not a size"));
        assert!(parse_size("-4k").unwrap_err().contains("not a size"));
        assert!(parse_size("").is_err());
        assert!(parse_size("1.5")
            .unwrap_err()
            .contains("whole number of bytes"));
        assert!(parse_size("1.1k").unwrap_err().contains("whole number"));
        assert!(parse_size("99999999P").unwrap_err().contains("more bytes"));
        let bounded = size_arg(1, 1 << 20);
        assert_eq!(bounded("1m").unwrap(), 1 << 20);
        assert!(bounded("2m").unwrap_err().contains("not in 1..=1048576"));
        assert!(bounded("0").is_err());
    }

    #[test]
    fn durations_take_fio_time_units_and_decimals() {
        let secs = |t| parse_duration(t).unwrap().as_secs_f64();
        assert_eq!(secs("10"), 10.0);
        assert_eq!(secs("1.5"), 1.5);
        assert_eq!(secs("10s"), 10.0);
        assert_eq!(secs("1m"), 60.0);
        assert_eq!(secs("1.5m"), 90.0);
        assert_eq!(secs("2h"), 7200.0);
        assert_eq!(secs("1d"), 86_400.0);
        assert_eq!(secs("250ms"), 0.25);
        assert_eq!(secs("100us"), 0.0001);
        assert!(parse_duration("10 fortnights")
            .unwrap_err()
            .contains("unknown unit"));
        assert!(parse_duration("-1s")
            .unwrap_err()
            .contains("not a duration"));
        assert!(parse_duration("soon").is_err());
        let bounded = duration_arg(1, 3600);
        assert_eq!(bounded("1m").unwrap(), Duration::from_secs(60));
        assert!(bounded("2h")
            .unwrap_err()
            .contains("from 1 to 3600 seconds"));
        assert!(bounded("0.5").is_err());
    }
}
