//! LEB128 varints, bounded. varint-rs (already in the tree through fjall)
//! shifts past 64 bits on an eleventh continuation byte, a panic in debug
//! builds; a trace is an input, so decoding here refuses it instead.

/// Appends `v` as an unsigned LEB128 varint (1 to 10 bytes).
#[inline]
pub fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends `v` zigzag-encoded: small magnitudes of either sign are short.
#[inline]
pub fn put_signed(out: &mut Vec<u8>, v: i64) {
    put(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// Why a varint could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bad {
    /// The bytes ended inside it.
    Truncated,
    /// More than 64 bits.
    TooLong,
}

/// Reads an unsigned varint from the front of `bytes`, advancing it.
#[inline]
pub fn take(bytes: &mut &[u8]) -> Result<u64, Bad> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate() {
        if i == 9 && b > 1 {
            return Err(Bad::TooLong);
        }
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            *bytes = &bytes[i + 1..];
            return Ok(value);
        }
    }
    Err(if bytes.len() >= 10 {
        Bad::TooLong
    } else {
        Bad::Truncated
    })
}

/// Reads a zigzag-encoded signed varint.
#[inline]
pub fn take_signed(bytes: &mut &[u8]) -> Result<i64, Bad> {
    let u = take(bytes)?;
    Ok((u >> 1) as i64 ^ -((u & 1) as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_edges_of_both_kinds() {
        let mut buf = Vec::new();
        let unsigned = [0, 1, 127, 128, 300, u32::MAX as u64, u64::MAX];
        let signed = [0, -1, 1, -64, 64, i64::MIN, i64::MAX];
        for v in unsigned {
            put(&mut buf, v);
        }
        for v in signed {
            put_signed(&mut buf, v);
        }
        assert_eq!(buf[..3], [0, 1, 127]);
        let mut rest = buf.as_slice();
        for v in unsigned {
            assert_eq!(take(&mut rest), Ok(v));
        }
        for v in signed {
            assert_eq!(take_signed(&mut rest), Ok(v));
        }
        assert!(rest.is_empty());
    }

    #[test]
    fn refuses_truncated_and_overlong_varints() {
        assert_eq!(take(&mut &[0x80u8, 0x80][..]), Err(Bad::Truncated));
        assert_eq!(take(&mut &[][..]), Err(Bad::Truncated));
        assert_eq!(take(&mut &[0xffu8; 11][..]), Err(Bad::TooLong));
        // Ten bytes whose last carries more than the 64th bit.
        let mut over = vec![0xffu8; 9];
        over.push(0x02);
        assert_eq!(take(&mut over.as_slice()), Err(Bad::TooLong));
    }
}
