//! A plan's time fields (`duration`, `min_duration`, `device.runtime`,
//! `device.ramp`, `precondition.round_seconds`) take units as every other
//! duration kvperf reads (`600`, `"10m"`, `"30s"`), in the file and by
//! `--set`. They are kept, and serialized, as whole seconds, so a plan
//! written `600` and one written `"10m"` are the same study.

use serde::{Deserialize, Deserializer};

/// A number of seconds or a duration with its unit.
#[derive(Deserialize)]
#[serde(untagged)]
enum Written {
    Whole(u64),
    Fraction(f64),
    Text(String),
}

fn seconds_of(written: Written) -> Result<u64, String> {
    let secs = match written {
        Written::Whole(n) => return Ok(n),
        Written::Fraction(f) => f,
        Written::Text(text) => crate::units::parse_duration(text.trim())?.as_secs_f64(),
    };
    let whole = secs.round();
    if (secs - whole).abs() > 1e-9 || whole < 0.0 {
        return Err(format!(
            "{secs} s is not a whole number of seconds (plan durations are whole seconds)"
        ));
    }
    Ok(whole as u64)
}

/// `deserialize_with` for a `u64` of seconds.
pub fn de<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let written = Written::deserialize(d).map_err(|_| {
        serde::de::Error::custom(
            "expected a duration: seconds or a number with a unit (30, \"10s\", \"10m\", \"1h\")",
        )
    })?;
    seconds_of(written).map_err(serde::de::Error::custom)
}

/// `deserialize_with` for an optional `u64` of seconds.
pub fn de_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    de(d).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize, Debug)]
    struct T {
        #[serde(deserialize_with = "de")]
        secs: u64,
        #[serde(default, deserialize_with = "de_opt")]
        maybe: Option<u64>,
    }

    fn parse(text: &str) -> Result<T, String> {
        toml::from_str::<T>(text).map_err(|e| e.message().to_string())
    }

    #[test]
    fn seconds_take_units_and_stay_whole() {
        assert_eq!(parse("secs = 600").unwrap().secs, 600);
        assert_eq!(parse("secs = \"10m\"").unwrap().secs, 600);
        assert_eq!(parse("secs = \"5s\"").unwrap().secs, 5);
        assert_eq!(
            parse("secs = \"1h\"\nmaybe = \"90s\"").unwrap().maybe,
            Some(90)
        );
        assert_eq!(parse("secs = 2.0").unwrap().secs, 2);
        assert_eq!(parse("secs = 1").unwrap().maybe, None);
        let err = parse("secs = \"1.5s\"").unwrap_err();
        assert!(err.contains("not a whole number of seconds"), "{err}");
        let err = parse("secs = \"soon\"").unwrap_err();
        assert!(err.contains("'soon' is not a duration"), "{err}");
        let err = parse("secs = true").unwrap_err();
        assert!(err.contains("expected a duration"), "{err}");
    }
}
