//! Identities of studies: a short, stable hash of a canonical JSON value,
//! so results that must belong together (a plan's steps, a study's shards)
//! can be told apart from those that do not. Not cryptographic: it guards
//! against mistakes, not against forgery.

/// FNV-1a (64 bits) of `value`'s compact JSON text, as 16 hex digits.
pub fn of(value: &serde_json::Value) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in value.to_string().bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_hash_equal_and_any_change_shows() {
        let a = serde_json::json!({ "recordcount": "1000", "threads": 4 });
        assert_eq!(of(&a), of(&a.clone()));
        assert_eq!(of(&a).len(), 16);
        let b = serde_json::json!({ "recordcount": "1001", "threads": 4 });
        assert_ne!(of(&a), of(&b));
    }
}
