//! How kvperf tells a file it wrote from a user's before replacing it: a
//! signature that must parse exactly, never a prefix a user may type
//! (`# kvperf notes`). Formats other tools read carry it where they
//! ignore it (a comment line); kvperf's own first lines name its version
//! and commit (`# kvperf 0.1.0 (af7a00957fd3) run`), parsed field by field.

/// kvperf's file token and the version of its scheme: `kvperf-file/1 KIND`.
pub const TOKEN: &str = "kvperf-file/1";

/// The signature of a file of `kind`: `kvperf-file/1 KIND`.
pub fn token(kind: &str) -> String {
    format!("{TOKEN} {kind}")
}

/// Line `n` (from 0) of `head`, complete (its line break within `head`)
/// and UTF-8, without its line break.
pub fn line(head: &[u8], n: usize) -> Option<&str> {
    let mut rest = head;
    for _ in 0..n {
        let end = rest.iter().position(|&b| b == b'\n')?;
        rest = &rest[end + 1..];
    }
    let end = rest.iter().position(|&b| b == b'\n')?;
    std::str::from_utf8(&rest[..end]).ok()
}

/// `MAJOR.MINOR.PATCH`, optionally `-PRE` (letters, digits, dots, dashes).
pub fn is_semver(text: &str) -> bool {
    let (core, pre) = match text.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (text, None),
    };
    let numbers = core.split('.').collect::<Vec<_>>();
    numbers.len() == 3
        && numbers
            .iter()
            .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        && pre.is_none_or(|p| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
        })
}

/// A commit as kvperf's build records it: 7 to 40 hex digits or
/// `unknown`, optionally `-dirty`.
pub fn is_commit(text: &str) -> bool {
    let hash = text.strip_suffix("-dirty").unwrap_or(text);
    hash == "unknown"
        || ((7..=40).contains(&hash.len()) && hash.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// `# kvperf <semver> (<commit>) <command>`: the first line of a text
/// result kvperf writes to a file, whose command is one to three words of
/// lowercase letters and dashes (`run`, `device corners`).
pub fn is_text_header(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("# kvperf ") else {
        return false;
    };
    let Some((version, rest)) = rest.split_once(" (") else {
        return false;
    };
    let Some((commit, command)) = rest.split_once(") ") else {
        return false;
    };
    let words: Vec<&str> = command.split(' ').collect();
    is_semver(version)
        && is_commit(commit)
        && (1..=3).contains(&words.len())
        && words
            .iter()
            .all(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_whole_and_exact() {
        assert_eq!(line(b"a\nb\n", 0), Some("a"));
        assert_eq!(line(b"a\nb\n", 1), Some("b"));
        assert_eq!(line(b"a\nb", 1), None, "cut short");
        assert_eq!(line(b"a\n", 2), None);
    }

    #[test]
    fn only_kvperfs_own_first_line_parses() {
        assert!(is_text_header("# kvperf 0.1.0 (af7a00957fd3) run"));
        assert!(is_text_header(
            "# kvperf 0.1.0 (unknown-dirty) device corners"
        ));
        assert!(is_text_header("# kvperf 1.2.3-rc.1 (af7a009) load"));
        for not in [
            "# kvperf notes",
            "# kvperf report",
            "# kvperf 0.1 (af7a009) run",
            "# kvperf 0.1.0 (my notes) run",
            "# kvperf 0.1.0 (af7a009) Run",
            "# kvperf 0.1.0 (af7a009) ",
            "# kvperf 0.1.0 (af7a009) a b c d",
            "## kvperf 0.1.0 (af7a009) run",
        ] {
            assert!(!is_text_header(not), "{not}");
        }
    }
}
