//! HdrHistograms as text (V2 + deflate, base64; nanoseconds): how results
//! carry them, so percentiles can be recomputed and runs merged exactly.

use std::borrow::Borrow;
use std::io::Read;

use anyhow::Context;
use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

pub fn encode(h: &Histogram<u64>) -> String {
    base64::engine::general_purpose::STANDARD.encode(v2_deflated(h))
}

/// `h` in V2 + deflate, before base64.
fn v2_deflated(h: &Histogram<u64>) -> Vec<u8> {
    let mut bytes = Vec::new();
    // Serializing into a Vec cannot fail for a valid histogram.
    let _ = V2DeflateSerializer::new().serialize(h, &mut bytes);
    bytes
}

/// Reads [`encode`]'s text. The text may come from a file a user edited,
/// so its header is checked before anything is sized by it: the deflated
/// form is inflated to at most [`LARGEST_ENCODING`] bytes, and the plain
/// form's payload length must fit what is there (the decoder would
/// otherwise allocate whatever length a header claims, up to 4 GiB).
pub fn decode(text: &str) -> anyhow::Result<Histogram<u64>> {
    decode_bytes(&base64_bytes(text)?)
}

fn base64_bytes(text: &str) -> anyhow::Result<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .context("histogram is not base64")
}

/// [`decode`] after base64.
fn decode_bytes(bytes: &[u8]) -> anyhow::Result<Histogram<u64>> {
    let plain =
        plain_encoding(bytes).map_err(|e| anyhow::anyhow!("histogram does not decode: {e}"))?;
    let mut h: Histogram<u64> = Deserializer::new()
        .deserialize(&mut plain.as_slice())
        .map_err(|e| anyhow::anyhow!("histogram does not decode: {e:?}"))?;
    // Counts whose sum passes 2^64 make every percentile wrong (and
    // overflow inside HdrHistogram's quantile walk): no run records that many.
    h.iter_recorded()
        .try_fold(0u64, |total, v| total.checked_add(v.count_at_value()))
        .ok_or_else(|| {
            anyhow::anyhow!("histogram does not decode: its counts add up to more than 2^64")
        })?;
    // Merging with a wider histogram must not fail.
    h.auto(true);
    Ok(h)
}

/// HdrHistogram's V2 encoding: plain, and deflated around a plain one.
const V2_COOKIE: u32 = 0x1c84_9313;
const V2_DEFLATED_COOKIE: u32 = 0x1c84_9314;
/// Cookie, payload length, normalizing offset, significant digits, lowest
/// and highest trackable value, integer-to-double ratio.
const V2_HEADER_LEN: usize = 40;
/// The most bytes a plain encoding may take. kvperf's own histograms take
/// a few KiB (a counter per occupied bucket run); a million distinct
/// latencies take a few MiB.
pub const LARGEST_ENCODING: usize = 16 << 20;
/// kvperf records with 3 significant digits ([`super::new_histogram`]).
/// The precision bounds what a header's range may cost: at 3 digits, 1 to
/// 2^64 - 1 takes 56,320 counts (440 KiB); at 5 digits, to 2^63, 97 MB
/// from 100 bytes of text. A sum of histograms also resizes to the
/// precision of its first.
const MOST_SIGNIFICANT_DIGITS: u32 = 3;

/// The plain V2 encoding inside `bytes`, its header checked.
fn plain_encoding(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let plain = match be_u32(bytes, 0)? {
        V2_COOKIE => bytes.to_vec(),
        V2_DEFLATED_COOKIE => {
            let claimed = be_u32(bytes, 4)? as usize;
            let deflated = bytes.get(8..).unwrap_or_default();
            if claimed > deflated.len() {
                return Err(format!(
                    "its header claims {claimed} deflated bytes, {} are there",
                    deflated.len()
                ));
            }
            let mut plain = Vec::new();
            flate2::read::ZlibDecoder::new(&deflated[..claimed])
                .take(LARGEST_ENCODING as u64 + 1)
                .read_to_end(&mut plain)
                .map_err(|e| format!("it does not inflate ({e})"))?;
            if plain.len() > LARGEST_ENCODING {
                return Err(format!("it inflates to more than {LARGEST_ENCODING} bytes"));
            }
            plain
        }
        other => return Err(format!("unknown encoding (cookie {other:#x})")),
    };
    if be_u32(&plain, 0)? != V2_COOKIE {
        return Err("the inflated bytes are not an HdrHistogram V2 encoding".into());
    }
    let payload = be_u32(&plain, 4)? as usize;
    let present = plain.len().saturating_sub(V2_HEADER_LEN);
    if payload > present {
        return Err(format!(
            "its header claims {payload} payload bytes, {present} are there"
        ));
    }
    let digits = be_u32(&plain, 12)?;
    if digits > MOST_SIGNIFICANT_DIGITS {
        return Err(format!(
            "{digits} significant digits (at most {MOST_SIGNIFICANT_DIGITS})"
        ));
    }
    Ok(plain)
}

fn be_u32(bytes: &[u8], at: usize) -> Result<u32, String> {
    bytes
        .get(at..at + 4)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or_else(|| "it is shorter than its header".into())
}

/// The sum of `histograms` (every recorded value of each, none averaged),
/// or None when there are none. Histograms with kvperf's settings (3
/// significant digits, auto-resizing) add exactly, bucket by bucket.
pub fn sum(
    histograms: impl IntoIterator<Item = impl Borrow<Histogram<u64>>>,
) -> Option<Histogram<u64>> {
    let mut total: Option<Histogram<u64>> = None;
    for h in histograms {
        match &mut total {
            // Auto-resizing histograms cannot fail to add.
            Some(t) => {
                let _ = t.add(h.borrow());
            }
            None => {
                let mut first = h.borrow().clone();
                first.auto(true);
                total = Some(first);
            }
        }
    }
    total
}

/// A histogram that serializes as [`encode`]'s text, held as its
/// encoding and decoded where it is used. Decoded, its counts take what
/// its largest value asks (at 3 digits, 440 KiB for one count at 2^63)
/// whatever its text takes: a results line of ~100 bytes can say so, and
/// every histogram of a file held decoded let 4,000 such lines (23 MB)
/// take 2-4 GB. Held encoded, a file's histograms take what its text
/// does, and at most one is decoded at a time (pass 16).
#[derive(Debug, Clone)]
pub struct Hdr(Box<[u8]>);

impl Hdr {
    /// `h`, encoded.
    pub fn of(h: &Histogram<u64>) -> Self {
        Self(v2_deflated(h).into())
    }

    /// The histogram, exact: every count as recorded.
    pub fn get(&self) -> Histogram<u64> {
        // Its bytes decoded when it was read, or were encoded from a
        // histogram [`decode`] accepts: they decode the same again.
        decode_bytes(&self.0).unwrap_or_else(|_| super::new_histogram())
    }
}

impl Serialize for Hdr {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for Hdr {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let read = || -> anyhow::Result<Self> {
            let bytes = base64_bytes(&text)?;
            // Checked whole now, so a file that does not decode is refused
            // as it is read; then dropped.
            decode_bytes(&bytes)?;
            Ok(Self(bytes.into()))
        };
        read().map_err(serde::de::Error::custom)
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
        let json = serde_json::to_string(&Hdr::of(&h)).unwrap();
        let again: Hdr = serde_json::from_str(&json).unwrap();
        assert_eq!(again.get().len(), 3);
        assert!(serde_json::from_str::<Hdr>("\"not a histogram\"").is_err());
    }

    fn base64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// A plain V2 header with `payload` claimed payload bytes.
    fn plain_header(payload: u32, digits: u32) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(V2_COOKIE.to_be_bytes());
        b.extend(payload.to_be_bytes());
        b.extend(0u32.to_be_bytes());
        b.extend(digits.to_be_bytes());
        b.extend(1u64.to_be_bytes());
        b.extend(1_000_000u64.to_be_bytes());
        b.extend(1.0f64.to_be_bytes());
        b
    }

    fn deflated(plain: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(plain).unwrap();
        let z = z.finish().unwrap();
        let mut b = Vec::new();
        b.extend(V2_DEFLATED_COOKIE.to_be_bytes());
        b.extend((z.len() as u32).to_be_bytes());
        b.extend(z);
        b
    }

    fn refusal(bytes: &[u8]) -> String {
        let err = decode(&base64(bytes)).expect_err("refused").to_string();
        assert!(!err.contains('\n'), "{err}");
        err
    }

    #[test]
    fn a_header_claiming_more_than_is_there_is_refused_before_allocating() {
        // 4 GiB of payload claimed by 40 bytes: the decoder alone would
        // allocate all of it.
        let err = refusal(&deflated(&plain_header(u32::MAX, 3)));
        assert!(
            err.contains("claims 4294967295 payload bytes, 0 are there"),
            "{err}"
        );
        let err = refusal(&plain_header(1000, 3));
        assert!(err.contains("claims 1000 payload bytes"), "{err}");
        let mut short = deflated(&plain_header(0, 3));
        short[7] = 255; // more deflated bytes claimed than follow
        assert!(refusal(&short).contains("deflated bytes"));
    }

    #[test]
    fn counts_that_add_up_past_2_to_the_64_are_refused() {
        // Found by fuzzing the results reader: such a histogram overflowed
        // in value_at_quantile (a panic with overflow checks, a wrong
        // percentile without).
        // Each count fits the encoding (at most 2^63 - 1); five of 2^62 do
        // not fit a u64 together. Recording saturates the total.
        let mut h = crate::measure::new_histogram();
        for v in 1..=5 {
            h.record_n(v * 1_000, 1 << 62).unwrap();
        }
        let err = decode(&encode(&h)).unwrap_err().to_string();
        assert!(err.contains("add up to more than 2^64"), "{err}");
        let mut fine = crate::measure::new_histogram();
        for v in 1..=3 {
            fine.record_n(v * 1_000, 1 << 62).unwrap();
        }
        assert_eq!(decode(&encode(&fine)).unwrap().len(), 3 << 62);
    }

    #[test]
    fn a_deflate_bomb_is_cut_off() {
        let mut bomb = plain_header(0, 3);
        bomb.resize(LARGEST_ENCODING + 64, 0);
        let err = refusal(&deflated(&bomb));
        assert!(err.contains("inflates to more than"), "{err}");
    }

    #[test]
    fn a_header_more_precise_than_kvperfs_is_refused_before_allocating() {
        // Pass 14: 5 digits up to 2^63 - 1 decoded to 97 MB; 40 such lines
        // of a results file took 2 GB in compare, report and a resume.
        let mut wide = plain_header(0, 5);
        wide[24..32].copy_from_slice(&(i64::MAX as u64).to_be_bytes());
        assert!(refusal(&deflated(&wide)).contains("5 significant digits (at most 3)"));
        wide[12..16].copy_from_slice(&4u32.to_be_bytes());
        assert!(refusal(&deflated(&wide)).contains("4 significant digits"));
        // At kvperf's 3, the widest range decodes, and costs what the bound says.
        wide[12..16].copy_from_slice(&3u32.to_be_bytes());
        assert_eq!(decode(&base64(&deflated(&wide))).unwrap().len(), 0);
        let all = Histogram::<u64>::new_with_bounds(1, u64::MAX, 3).unwrap();
        assert_eq!(all.distinct_values(), 56_320);
        let mut widest = crate::measure::new_histogram();
        widest.record(u64::MAX / 2).unwrap();
        assert_eq!(decode(&encode(&widest)).unwrap().max(), widest.max());
    }

    #[test]
    fn a_read_histogram_holds_its_text_and_decodes_exactly() {
        // Pass 16: ~60 bytes of text over the widest range hold a count at
        // 2^62, 440 KiB decoded; a file's histograms were held decoded.
        let mut far = Histogram::<u64>::new_with_bounds(1, u64::MAX, 3).unwrap();
        far.record(1 << 62).unwrap();
        let text = serde_json::to_string(&Hdr::of(&far)).unwrap();
        let read: Hdr = serde_json::from_str(&text).unwrap();
        assert!(read.0.len() < 64, "{} bytes held", read.0.len());
        assert_eq!(serde_json::to_string(&read).unwrap(), text);
        assert_eq!(read.get().max(), far.max());
        // Every count at its value, as recorded, through text and back.
        let mut h = crate::measure::new_histogram();
        for v in [1u64, 999, 1_000, 123_456, 10_000_000_000] {
            h.record_n(v, v % 7 + 1).unwrap();
        }
        let counts = |h: &Histogram<u64>| {
            h.iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect::<Vec<_>>()
        };
        let back: Hdr =
            serde_json::from_str(&serde_json::to_string(&Hdr::of(&h)).unwrap()).unwrap();
        assert_eq!(counts(&back.get()), counts(&h));
        assert_eq!(
            counts(&sum([back.get(), far]).unwrap())[..5],
            counts(&h)[..]
        );
    }

    #[test]
    fn impossible_precision_and_unknown_cookies_are_refused() {
        assert!(refusal(&deflated(&plain_header(0, 6))).contains("6 significant digits"));
        assert!(refusal(&[0, 1, 2, 3, 4, 5, 6, 7]).contains("unknown encoding"));
        assert!(refusal(&[0x1c]).contains("shorter than its header"));
        // A plain encoding (not deflated) is read as well, as HdrHistogram's tools write it.
        assert_eq!(decode(&base64(&plain_header(0, 3))).unwrap().len(), 0);
    }
}
