//! HdrHistograms as text (V2 + deflate, base64; nanoseconds): how results
//! carry them, so percentiles can be recomputed and runs merged exactly.

use anyhow::Context;
use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

pub fn encode(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    // Serializing into a Vec cannot fail for a valid histogram.
    let _ = V2DeflateSerializer::new().serialize(h, &mut bytes);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub fn decode(text: &str) -> anyhow::Result<Histogram<u64>> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .context("histogram is not base64")?;
    let mut h: Histogram<u64> = Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| anyhow::anyhow!("histogram does not decode: {e:?}"))?;
    // Merging with a wider histogram must not fail.
    h.auto(true);
    Ok(h)
}

/// The sum of `histograms` (every recorded value of each, none averaged),
/// or None when there are none. Histograms with kvperf's settings (3
/// significant digits, auto-resizing) add exactly, bucket by bucket.
pub fn sum<'a>(histograms: impl IntoIterator<Item = &'a Histogram<u64>>) -> Option<Histogram<u64>> {
    let mut total: Option<Histogram<u64>> = None;
    for h in histograms {
        match &mut total {
            // Auto-resizing histograms cannot fail to add.
            Some(t) => {
                let _ = t.add(h);
            }
            None => {
                let mut first = h.clone();
                first.auto(true);
                total = Some(first);
            }
        }
    }
    total
}

/// A histogram that serializes as [`encode`]'s text.
#[derive(Debug, Clone)]
pub struct Hdr(pub Histogram<u64>);

impl Serialize for Hdr {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for Hdr {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        decode(&text).map(Hdr).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_round_trip_through_text() {
        let mut h = crate::measure::new_histogram();
        for v in [1_000u64, 5_000, 1_000_000] {
            h.record(v).unwrap();
        }
        let back = decode(&encode(&h)).unwrap();
        assert_eq!(back.len(), 3);
        assert_eq!(back.max(), h.max());
        let json = serde_json::to_string(&Hdr(h)).unwrap();
        let again: Hdr = serde_json::from_str(&json).unwrap();
        assert_eq!(again.0.len(), 3);
        assert!(serde_json::from_str::<Hdr>("\"not a histogram\"").is_err());
    }
}
