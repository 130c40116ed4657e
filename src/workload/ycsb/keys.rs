//! YCSB key names: `user` + zero padding + the decimal key number, hashed
//! with FNV-64 unless `insertorder=ordered` (YCSB 0.17.0
//! `CoreWorkload.buildKeyName` and `Utils.hash`).

use crate::workload::generator::fnvhash64;

/// Writes the key for `keynum` into `out` (cleared first) without allocating.
pub fn build_key_name(keynum: u64, hashed: bool, zeropadding: usize, out: &mut Vec<u8>) {
    // YCSB's key numbers are Java longs; ours are u64 but never exceed i64.
    let number = if hashed {
        fnvhash64(keynum as i64)
    } else {
        keynum as i64
    };
    let mut digits = itoa::Buffer::new();
    let text = digits.format(number);
    out.clear();
    out.extend_from_slice(b"user");
    // Java pads by the string length, which counts a minus sign
    // (only possible for fnvhash64 == Long.MIN_VALUE).
    for _ in text.len()..zeropadding {
        out.push(b'0');
    }
    out.extend_from_slice(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// FNV-1a 64 over the little-endian bytes, then Java's Math.abs,
    /// computed here independently of the generator module.
    fn java_fnvhash64(val: i64) -> i64 {
        let mut hash: u64 = 0xCBF2_9CE4_8422_2325;
        for byte in val.to_le_bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(1_099_511_628_211);
        }
        (hash as i64).wrapping_abs()
    }

    fn key(keynum: u64, hashed: bool, pad: usize) -> String {
        let mut out = Vec::new();
        build_key_name(keynum, hashed, pad, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn hashed_keys_match_ycsb_java() {
        // Values quoted from YCSB Java runs in the reference notes.
        assert_eq!(key(0, true, 1), "user6284781860667377211");
        assert_eq!(key(1, true, 1), "user8517097267634966620");
        for keynum in [2u64, 17, 999, 123_456_789, 1 << 40] {
            assert_eq!(
                key(keynum, true, 1),
                format!("user{}", java_fnvhash64(keynum as i64))
            );
        }
    }

    #[test]
    fn ordered_keys_are_zero_padded_decimals() {
        assert_eq!(key(42, false, 1), "user42");
        assert_eq!(key(42, false, 6), "user000042");
        assert_eq!(key(1234567, false, 3), "user1234567");
    }
}
