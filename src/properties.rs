//! YCSB-style properties: `-P file` (Java `.properties` syntax) and `-p k=v`.
//!
//! Later sources win, as in YCSB's `Client`: files in the order given, then
//! every `-p` override. Values stay strings until a consumer parses them, so
//! an error can always name the property and the text it could not read.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use crate::error::InputError;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Properties {
    values: BTreeMap<String, String>,
    defaults: DefaultsUsed,
}

/// The properties read but not given, with the default each reader used:
/// what a result records beside the given ones (`defaults`). Not part of
/// the properties' value: two sets of equal properties are equal whatever
/// was read from them.
#[derive(Debug, Default)]
struct DefaultsUsed(Mutex<BTreeMap<String, String>>);

impl DefaultsUsed {
    fn note(&self, key: &str, value: impl std::fmt::Display) {
        let mut used = self.0.lock().unwrap_or_else(|e| e.into_inner());
        used.entry(key.to_string())
            .or_insert_with(|| value.to_string());
    }
}

impl Clone for DefaultsUsed {
    fn clone(&self) -> Self {
        Self(Mutex::new(
            self.0.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        ))
    }
}

impl PartialEq for DefaultsUsed {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Properties {
    pub fn new() -> Self {
        Self::default()
    }

    /// Loads the property file `path`, or the shipped core workload it
    /// names (`workloada`, `workloads/workloada`) when no such file exists.
    pub fn load_file(&mut self, path: &Path) -> anyhow::Result<()> {
        if let Some(text) = crate::shipped::workload(path) {
            self.load_str(text);
            return Ok(());
        }
        if !path.exists() {
            let shipped = crate::shipped::WORKLOADS.map(|(n, _)| n).join(", ");
            return Err(crate::error::InputError::Invalid(format!(
                "workload file '{}' does not exist, nor is it a shipped workload ({shipped})",
                path.display()
            ))
            .into());
        }
        let text =
            crate::files::read_input(path, "workload file", crate::files::bound::PROPERTY_FILE)?;
        // A byte-order mark (as Windows editors save UTF-8) is no part of
        // the first name: it was read as '\u{feff}readproportion', unknown,
        // and the run measured the default instead.
        self.load_str(text.strip_prefix('\u{feff}').unwrap_or(&text));
        Ok(())
    }

    /// Reads a Java properties file: `key=value`, `key: value` or
    /// `key value`, `#`/`!` comments, trailing-backslash continuations.
    pub fn load_str(&mut self, text: &str) {
        let mut logical = String::new();
        for raw in text.lines() {
            let line = raw.trim_start();
            if logical.is_empty()
                && (line.is_empty() || line.starts_with('#') || line.starts_with('!'))
            {
                continue;
            }
            // A line ending in an odd number of backslashes continues.
            let trailing = line.len() - line.trim_end_matches('\\').len();
            if trailing % 2 == 1 {
                logical.push_str(&line[..line.len() - 1]);
                continue;
            }
            logical.push_str(line);
            self.insert_logical_line(&logical);
            logical.clear();
        }
        if !logical.is_empty() {
            self.insert_logical_line(&logical);
        }
    }

    fn insert_logical_line(&mut self, line: &str) {
        let line = line.trim();
        let split = line
            .char_indices()
            .find(|&(_, c)| c == '=' || c == ':' || c.is_whitespace());
        let (key, value) = match split {
            None => (line, ""),
            Some((i, _)) => {
                let rest = line[i..].trim_start();
                let rest = rest
                    .strip_prefix('=')
                    .or_else(|| rest.strip_prefix(':'))
                    .unwrap_or(rest);
                (&line[..i], rest.trim())
            }
        };
        if !key.is_empty() {
            self.set(key, value);
        }
    }

    /// Parses one `-p key=value` override.
    pub fn set_override(&mut self, assignment: &str) -> Result<(), InputError> {
        match assignment.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() => {
                self.set(key.trim(), value.trim());
                Ok(())
            }
            _ => {
                // `-p redis.password:X` (a typo for `=`) must not print X.
                let shown = if is_secret(assignment) {
                    "(redacted)".to_string()
                } else {
                    redacted_arg(assignment)
                };
                Err(InputError::Invalid(format!(
                    "-p expects key=value, got '{shown}'"
                )))
            }
        }
    }

    pub fn set(&mut self, key: &str, value: &str) {
        self.values.insert(key.to_string(), value.to_string());
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    pub fn contains(&self, key: &str) -> bool {
        self.values.contains_key(key)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Properties whose name starts with `prefix`, prefix removed.
    pub fn with_prefix<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = (&'a str, &'a str)> {
        self.iter()
            .filter_map(move |(k, v)| k.strip_prefix(prefix).map(|rest| (rest, v)))
    }

    pub fn as_map(&self) -> &BTreeMap<String, String> {
        &self.values
    }

    /// Every property read but not given, with the default its reader
    /// used (the first one, when two readers read it), credentials redacted.
    pub fn defaults_used(&self) -> BTreeMap<String, String> {
        let used = self.defaults.0.lock().unwrap_or_else(|e| e.into_inner());
        used.iter()
            .filter(|(k, _)| !self.values.contains_key(*k))
            .map(|(k, v)| (k.clone(), redacted(k, v)))
            .collect()
    }

    pub fn string(&self, key: &str, default: &str) -> String {
        match self.get(key) {
            Some(value) => value.to_string(),
            None => {
                self.defaults.note(key, default);
                default.to_string()
            }
        }
    }

    /// `key` parsed by `parse`, or `default` (noted as used, shown as
    /// `shown`) when it is not given: what every typed reader does.
    fn read<T>(
        &self,
        key: &str,
        default: T,
        shown: impl std::fmt::Display,
        parse: impl FnOnce(&str) -> Result<T, InputError>,
    ) -> Result<T, InputError> {
        match self.get(key) {
            None => {
                self.defaults.note(key, shown);
                Ok(default)
            }
            Some(text) => parse(text),
        }
    }

    pub fn u64(&self, key: &str, default: u64) -> Result<u64, InputError> {
        self.read(key, default, default, |text| parse_u64(key, text))
    }

    pub fn f64(&self, key: &str, default: f64) -> Result<f64, InputError> {
        self.read(key, default, default, |text| match text.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(InputError::property(
                key,
                format!("'{text}' is not a number"),
            )),
        })
    }

    /// Bytes, with fio's units (`1k`, `64m`) or IEC/SI ones ([`crate::units`]).
    pub fn size(&self, key: &str, default: u64) -> Result<u64, InputError> {
        self.read(key, default, default, |text| {
            crate::units::parse_size(text).map_err(|e| InputError::property(key, e))
        })
    }

    /// A duration: seconds (`1.5`) or with a unit (`10s`, `1m`, `2h`).
    pub fn duration(&self, key: &str, default: Duration) -> Result<Duration, InputError> {
        self.read(key, default, default.as_secs_f64(), |text| {
            crate::units::parse_duration(text).map_err(|e| InputError::property(key, e))
        })
    }

    /// Java's `Boolean.parseBoolean`: "true" in any case is true, all else false.
    /// We are stricter: anything but true/false is an error, since a typo
    /// silently turning a feature off is worse than a clear message.
    pub fn bool(&self, key: &str, default: bool) -> Result<bool, InputError> {
        self.read(key, default, default, |text| {
            if text.eq_ignore_ascii_case("true") {
                Ok(true)
            } else if text.eq_ignore_ascii_case("false") {
                Ok(false)
            } else {
                Err(InputError::property(
                    key,
                    format!("'{text}' is not true or false"),
                ))
            }
        })
    }
}

/// Words whose presence in a name (a property, a flag, an option) marks
/// its value a credential: every output shows it as `(redacted)`.
const SECRET_WORDS: [&str; 11] = [
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "secret",
    "token",
    "credential",
    "apikey",
    "accesskey",
    "privatekey",
    "requirepass",
];

/// Parts of a name (between separators) that are a credential's name only
/// whole: `redis.pass`, `redis.pw`, `redis.auth` (Redis's own `AUTH`), not
/// `passes` or `author`.
const SECRET_PARTS: [&str; 3] = ["pass", "pw", "auth"];

/// Whether `key` names a credential: it holds one of [`SECRET_WORDS`]
/// (in any case, with any separators: `api_key`, `Access-Key`), or one
/// of its parts is a misspelling of one (`redis.pasword`,
/// `postgres.passwrod`, `s3.secert`): a typo must not print the
/// credential it was meant to hide. The one test of every output's
/// redaction ([`redacted`], [`redacted_arg`]).
pub fn is_secret(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    let squeezed: String = key.chars().filter(char::is_ascii_alphanumeric).collect();
    if SECRET_WORDS.iter().any(|w| squeezed.contains(w)) {
        return true;
    }
    key.split(|c: char| !c.is_ascii_alphanumeric()).any(|part| {
        SECRET_PARTS.contains(&part) || SECRET_WORDS.iter().any(|w| misspelt_within(part, w))
    })
}

/// Whether some stretch of `part` is a misspelling of `word`: within two
/// edits of a word of 8 letters or more, one edit of a shorter one of 5
/// or more (shorter words are too easily met by chance); a swap of two
/// neighbours is one edit. One pass over `part` (Sellers' approximate
/// search, optimal string alignment): the least distance of any stretch
/// ending at each byte, so the cost is `part`'s length times the word's
/// (every stretch measured on its own took 5 ms per step of a plan, and
/// 7 s for a key of 100 000 bytes).
fn misspelt_within(part: &str, word: &str) -> bool {
    let edits = match word.len() {
        8.. => 2,
        5..=7 => 1,
        _ => return false,
    };
    // Both ASCII: a part is split at every byte that is not an ASCII
    // letter or digit.
    let (w, p) = (word.as_bytes(), part.as_bytes());
    let m = w.len();
    // Columns j-2, j-1 and j of the distances from word[..i] to the best
    // stretch ending before part[j]; a stretch may start anywhere (row 0).
    let mut before = vec![0usize; m + 1];
    let mut last: Vec<usize> = (0..=m).collect();
    let mut now = vec![0usize; m + 1];
    for j in 1..=p.len() {
        for i in 1..=m {
            let cost = usize::from(w[i - 1] != p[j - 1]);
            let mut d = (last[i] + 1).min(now[i - 1] + 1).min(last[i - 1] + cost);
            if i > 1 && j > 1 && w[i - 1] == p[j - 2] && w[i - 2] == p[j - 1] {
                d = d.min(before[i - 2] + 1);
            }
            now[i] = d;
        }
        if now[m] <= edits {
            return true;
        }
        std::mem::swap(&mut before, &mut last);
        std::mem::swap(&mut last, &mut now);
    }
    false
}

/// `value` as results may show it: credentials replaced, and a URL's
/// password (`scheme://user:PASSWORD@host`) removed, and so is a
/// credential's value in a URL's query or a connection string
/// (`jdbc:postgresql://h/db?user=u&password=PW`, as YCSB's JDBC binding
/// takes `db.url`; `host=h password=PW`).
pub fn redacted(key: &str, value: &str) -> String {
    if is_secret(key) {
        return if value.is_empty() {
            String::new()
        } else {
            "(redacted)".into()
        };
    }
    match (url_credentials(value), bare_userinfo(value)) {
        (Some(c), _) => redacted_pairs(&format!("{}://{}:(redacted)@{}", c.scheme, c.user, c.host)),
        (None, Some((user, host))) => format!("{user}:(redacted)@{host}"),
        (None, None) => redacted_pairs(value),
    }
}

/// `user:password@host` without a scheme, as one word (a host given as
/// `u:PW@h`, which a client takes for a host's name and an error quotes,
/// pass 16): its user and host. A user is a name (no `/`, `=`, `@`).
fn bare_userinfo(word: &str) -> Option<(&str, &str)> {
    if word.contains("://") || word.contains(char::is_whitespace) {
        return None;
    }
    let (userinfo, host) = word.rsplit_once('@')?;
    let (user, _) = userinfo.split_once(':')?;
    (!user.is_empty() && !user.contains(['/', '=', '@'])).then_some((user, host))
}

/// `text` (an error's words, which may quote what a user gave: a host
/// written as `redis://u:PW@h`, a libpq `host=h password=PW`) with every
/// URL's password and every credential's value replaced, wherever they
/// stand in it (pass 14: "cannot reach Redis at [redis://u:PW@...]").
pub fn scrubbed_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        // The authority runs to the next `/`, white space, quote or bracket.
        let end = tail
            .find(|c: char| c == '/' || c.is_whitespace() || "\"'[]()<>,;".contains(c))
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority
            .rsplit_once('@')
            .and_then(|(info, host)| Some((info.split_once(':')?.0, host)))
        {
            Some((user, host)) => {
                out.push_str(&format!("{user}:(redacted)@{host}"));
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    redacted_pairs(&bare_userinfos_redacted(&out))
}

/// `text` with the password of each word that is a [`bare_userinfo`]
/// (words end at white space, a quote or a bracket) replaced.
fn bare_userinfos_redacted(text: &str) -> String {
    let ends = |c: char| c.is_whitespace() || "\"'[]()<>,;".contains(c);
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let end = rest.find(ends).unwrap_or(rest.len());
        let word = &rest[..end];
        match bare_userinfo(word) {
            Some((user, host)) if word != format!("{user}:(redacted)@{host}") => {
                out.push_str(&format!("{user}:(redacted)@{host}"));
            }
            _ => out.push_str(word),
        }
        let sep = rest[end..].chars().next().map_or(0, char::len_utf8);
        out.push_str(&rest[end..end + sep]);
        rest = &rest[end + sep..];
    }
    out
}

/// `text` with the value of every `NAME=VALUE` whose NAME [`is_secret`]
/// replaced, where NAME starts `text` or follows `?`, `&`, `;`, `,` or
/// white space, and VALUE runs to the next of those.
fn redacted_pairs(text: &str) -> String {
    let ends_value = |c: char| "?&;,".contains(c) || c.is_whitespace();
    let in_name = |c: char| c.is_ascii_alphanumeric() || "._-".contains(c);
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('=') {
        let before = &rest[..at];
        let start = before
            .char_indices()
            .rev()
            .take_while(|&(_, c)| in_name(c))
            .last()
            .map_or(at, |(i, _)| i);
        let name = &before[start..];
        let after_separator = before[..start].chars().next_back().is_none_or(ends_value);
        let value_len = rest[at + 1..]
            .find(ends_value)
            .unwrap_or(rest.len() - at - 1);
        if !name.is_empty() && after_separator && value_len > 0 && is_secret(name) {
            out.push_str(&rest[..=at]);
            out.push_str("(redacted)");
            rest = &rest[at + 1 + value_len..];
        } else {
            out.push_str(&rest[..=at]);
            rest = &rest[at + 1..];
        }
    }
    out.push_str(rest);
    out
}

/// One command-line argument as every output shows it (the `Command line:`
/// header, a plan's records and listings, an error quoting it), and what
/// decides that a plan passes it to its child privately: every spelling
/// of a credential redacted. The names before each `=` are read in turn
/// (`KEY=VALUE`, `-p=KEY=VALUE`, `--p=KEY=VALUE`, `-pKEY=VALUE`,
/// `--flag=VALUE`): after the first that [`is_secret`], all is
/// `(redacted)`; a name is letters, digits and `.`, `_`, `-` (a path
/// holding `=` ends the names). Otherwise a URL's password in it is.
pub fn redacted_arg(arg: &str) -> String {
    let is_name = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    };
    let mut start = 0;
    while let Some(at) = arg[start..].find('=').map(|i| start + i) {
        let name = &arg[start..at];
        if !is_name(name) {
            break;
        }
        if is_secret(name) {
            return if at + 1 == arg.len() {
                arg.to_string()
            } else {
                format!("{}=(redacted)", &arg[..at])
            };
        }
        start = at + 1;
    }
    // A URL's password: the URL starts after the last `=` before its `://`.
    match arg.find("://") {
        Some(scheme_end) => {
            let from = arg[..scheme_end].rfind('=').map_or(0, |i| i + 1);
            format!("{}{}", &arg[..from], redacted("", &arg[from..]))
        }
        // `-p=redis.host=u:PW@h`: the value after the names.
        None => match bare_userinfo(&arg[start..]) {
            Some((user, host)) => format!("{}{user}:(redacted)@{host}", &arg[..start]),
            None => redacted_pairs(arg),
        },
    }
}

/// `text` (a server's or a driver's words, shown as they are) with every
/// non-empty secret cut out.
pub fn scrubbed<'a>(text: &str, secrets: impl IntoIterator<Item = &'a str>) -> String {
    secrets
        .into_iter()
        .filter(|s| !s.is_empty())
        .fold(text.to_string(), |t, s| t.replace(s, "(redacted)"))
}

/// The parts of `scheme://user:password@host...` around its password.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UrlCredentials<'a> {
    pub scheme: &'a str,
    pub user: &'a str,
    pub password: &'a str,
    /// The host and all after it.
    pub host: &'a str,
}

/// A URL's user and password, if it has a password. The userinfo ends at
/// the last `@` (a password may hold `@`, `:` and `/` unescaped; an `@`
/// after the host only hides more) and the user at its first `:`.
pub fn url_credentials(url: &str) -> Option<UrlCredentials<'_>> {
    let (scheme, rest) = url.split_once("://")?;
    let (userinfo, host) = rest.rsplit_once('@')?;
    let (user, password) = userinfo.split_once(':')?;
    Some(UrlCredentials {
        scheme,
        user,
        password,
        host,
    })
}

impl Properties {
    /// Every property with credentials redacted: what results record.
    pub fn redacted_map(&self) -> BTreeMap<String, String> {
        self.iter()
            .map(|(k, v)| (k.to_string(), redacted(k, v)))
            .collect()
    }
}

/// A non-negative integer; also accepts `_` digit separators.
pub fn parse_u64(key: &str, text: &str) -> Result<u64, InputError> {
    let cleaned: String = text.chars().filter(|&c| c != '_').collect();
    if let Some(rest) = cleaned.strip_prefix('-') {
        if rest.parse::<u64>().is_ok() {
            return Err(InputError::property(key, format!("'{text}' is negative")));
        }
    }
    cleaned
        .parse::<u64>()
        .map_err(|_| InputError::property(key, format!("'{text}' is not a non-negative integer")))
}

#[cfg(test)]
mod tests {
    /// Pass 14: an error quoting a host given as a URL with a password, or
    /// a libpq connection string, printed the password in clear.
    #[test]
    fn an_errors_words_lose_every_password_in_them() {
        for (text, shown) in [
            (
                "cannot reach Redis at [redis://u:PW@127.0.0.1:17799]:6379 (refused)",
                "cannot reach Redis at [redis://u:(redacted)@127.0.0.1:17799]:6379 (refused)",
            ),
            (
                "PostgreSQL at host=127.0.0.1 port=5 user=u password=PW:5432 is not reachable",
                "PostgreSQL at host=127.0.0.1 port=5 user=u password=(redacted) is not reachable",
            ),
            (
                "a: postgres://u:p@ss@h/db and mongodb://x@h and http://h/a:b@c",
                "a: postgres://u:(redacted)@h/db and mongodb://x@h and http://h/a:b@c",
            ),
            ("no url here", "no url here"),
        ] {
            assert_eq!(super::scrubbed_text(text), shown);
        }
    }

    use super::*;

    #[test]
    fn secrets_are_scrubbed_from_words_and_an_empty_one_is_ignored() {
        assert_eq!(
            scrubbed("no pw1 and pw2", ["pw1", "", "pw2"]),
            "no (redacted) and (redacted)"
        );
        assert_eq!(scrubbed("as is", None), "as is");
    }

    #[test]
    fn defaults_read_are_listed_with_the_value_used_and_given_ones_are_not() {
        let mut p = Properties::new();
        p.set("recordcount", "10");
        p.set("postgres.password", "pw");
        assert_eq!(p.u64("recordcount", 1000).unwrap(), 10);
        assert_eq!(p.u64("fieldcount", 10).unwrap(), 10);
        assert_eq!(p.string("requestdistribution", "uniform"), "uniform");
        assert!(p.bool("readallfields", true).unwrap());
        assert_eq!(p.f64("readproportion", 0.95).unwrap(), 0.95);
        assert_eq!(
            p.duration("warmuptime", Duration::from_millis(1500))
                .unwrap(),
            Duration::from_millis(1500)
        );
        // A second reader with another default: the first one's is kept.
        assert_eq!(p.u64("fieldcount", 3).unwrap(), 3);
        let used = p.defaults_used();
        let expected: BTreeMap<String, String> = [
            ("fieldcount", "10"),
            ("readallfields", "true"),
            ("readproportion", "0.95"),
            ("requestdistribution", "uniform"),
            ("warmuptime", "1.5"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(used, expected);
        // The log is not part of the value; a clone carries it.
        assert_eq!(p.clone().defaults_used(), expected);
        let mut q = Properties::new();
        q.set("recordcount", "10");
        q.set("postgres.password", "pw");
        assert_eq!(p, q);
        // Given later, a property is no longer a default.
        p.set("fieldcount", "4");
        assert!(!p.defaults_used().contains_key("fieldcount"));
    }

    #[test]
    fn parses_java_properties_syntax() {
        let mut p = Properties::new();
        p.load_str(
            "# comment\n! also comment\nrecordcount=1000\nworkload : site.ycsb.workloads.CoreWorkload\n\
             readproportion 0.5\nlong=a\\\n  b\n  spaced = x y \n",
        );
        assert_eq!(p.get("recordcount"), Some("1000"));
        assert_eq!(p.get("workload"), Some("site.ycsb.workloads.CoreWorkload"));
        assert_eq!(p.get("readproportion"), Some("0.5"));
        assert_eq!(p.get("long"), Some("ab"));
        assert_eq!(p.get("spaced"), Some("x y"));
    }

    #[test]
    fn overrides_win_and_bad_override_is_rejected() {
        let mut p = Properties::new();
        p.load_str("recordcount=10");
        p.set_override("recordcount=20").unwrap();
        assert_eq!(p.u64("recordcount", 0).unwrap(), 20);
        assert!(p.set_override("novalue").is_err());
        assert!(p.set_override("=3").is_err());
    }

    /// The one-pass search finds a misspelling exactly where measuring
    /// every stretch on its own did (strsim's optimal string alignment),
    /// over parts made of the words' letters, cut, swapped and changed.
    #[test]
    fn the_one_pass_search_agrees_with_measuring_every_stretch() {
        fn every_stretch(part: &str, word: &str) -> bool {
            let edits = match word.len() {
                8.. => 2,
                5..=7 => 1,
                _ => return false,
            };
            let lengths = word.len().saturating_sub(edits)..=word.len() + edits;
            (0..part.len()).any(|start| {
                lengths.clone().any(|len| {
                    part.get(start..start + len)
                        .is_some_and(|stretch| strsim::osa_distance(stretch, word) <= edits)
                })
            })
        }
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let mut agreed = [0usize; 2];
        for _ in 0..20_000 {
            let word = SECRET_WORDS[next(SECRET_WORDS.len())];
            let letters: Vec<u8> = word.bytes().chain(*b"xo1").collect();
            let mut part: Vec<u8> = (0..next(4)).map(|_| letters[next(letters.len())]).collect();
            part.extend(word.bytes());
            for _ in 0..next(4) {
                let at = next(part.len());
                match next(4) {
                    0 => part[at] = letters[next(letters.len())],
                    1 => {
                        part.remove(at);
                    }
                    2 => part.insert(at, letters[next(letters.len())]),
                    _ if at + 1 < part.len() => part.swap(at, at + 1),
                    _ => {}
                }
            }
            part.extend((0..next(4)).map(|_| letters[next(letters.len())]));
            let part = String::from_utf8(part).unwrap();
            let expected = every_stretch(&part, word);
            assert_eq!(misspelt_within(&part, word), expected, "{part} {word}");
            agreed[usize::from(expected)] += 1;
        }
        assert!(agreed[0] > 1000 && agreed[1] > 1000, "{agreed:?}");
    }

    /// Every credential word, misspelt or spelt another way, is one; no
    /// name kvperf knows that is not a credential is taken for one.
    #[test]
    fn a_credential_is_known_in_any_spelling_and_nothing_else_is() {
        for key in [
            "redis.password",
            "redis.pasword",
            "postgres.passwrod",
            "postgres.PassWord",
            "cassandra.passwd",
            "db.pwd",
            "aws.secret_access_key",
            "s3.secert",
            "api_token",
            "github.tokn",
            "x.api-key",
            "Access_Key",
            "private.key",
            "ssh.passphrase",
            "gcp.credentials",
            "redis.requirepass",
            "redis.pass",
            "redis.pw",
            "redis.auth",
        ] {
            assert!(is_secret(key), "{key}");
        }
        let engines: Vec<String> = crate::engine::registry()
            .iter()
            .flat_map(|s| {
                s.options
                    .iter()
                    .map(move |o| format!("{}.{}", s.name, o.name))
            })
            .collect();
        let known = crate::workload::ycsb::config::KNOWN_PROPERTIES
            .iter()
            .chain(crate::measure::power::PROPERTIES.iter())
            .map(|k| k.to_string())
            .chain(engines);
        for key in known {
            let credential = key.ends_with(".password") || key.ends_with(".url");
            if !credential {
                assert!(!is_secret(&key), "{key} is no credential");
            }
        }
    }

    /// Each spelling of `-p` and of a flag: the value after a credential's
    /// name redacted, whatever precedes it; a URL's password; nothing else.
    #[test]
    fn every_spelling_of_an_argument_is_redacted_alike() {
        for (arg, shown) in [
            ("redis.password=pw", "redis.password=(redacted)"),
            ("-p=redis.password=pw", "-p=redis.password=(redacted)"),
            (
                "--p=postgres.password=pw",
                "--p=postgres.password=(redacted)",
            ),
            ("-predis.password=pw", "-predis.password=(redacted)"),
            ("-p=redis.pasword=p=w", "-p=redis.pasword=(redacted)"),
            ("--api_token=pw", "--api_token=(redacted)"),
            ("redis.password=", "redis.password="),
            (
                "-p=power.redfish.url=https://root:pw@bmc/r?a=b",
                "-p=power.redfish.url=https://root:(redacted)@bmc/r?a=b",
            ),
            (
                "mongodb.url=mongodb://kv:p@w@h/db",
                "mongodb.url=mongodb://kv:(redacted)@h/db",
            ),
            ("recordcount=10", "recordcount=10"),
            (
                "-p=hdrhistogram.output.path=/tmp/token=1/x",
                "-p=hdrhistogram.output.path=/tmp/token=1/x",
            ),
            (
                "--output=/tmp/passwords.json",
                "--output=/tmp/passwords.json",
            ),
            ("run", "run"),
        ] {
            assert_eq!(redacted_arg(arg), shown, "{arg}");
        }
        let mut p = Properties::new();
        let err = p.set_override("redis.password:pw").unwrap_err().to_string();
        assert!(err.ends_with("got '(redacted)'"), "{err}");
    }

    #[test]
    fn credentials_are_redacted() {
        assert_eq!(redacted("postgres.password", "s3cret"), "(redacted)");
        assert_eq!(redacted("redis.PASSWORD", "s3cret"), "(redacted)");
        assert_eq!(
            redacted("mongodb.url", "mongodb://ycsb:s3cret@127.0.0.1:27017/db"),
            "mongodb://ycsb:(redacted)@127.0.0.1:27017/db"
        );
        assert_eq!(redacted("recordcount", "1000"), "1000");
        assert_eq!(
            redacted("ferretdb_pg_url", "postgres://kv@127.0.0.1/db"),
            "postgres://kv@127.0.0.1/db",
            "no password, nothing to hide"
        );
        let mut p = Properties::new();
        p.set("cassandra.password", "pw");
        assert_eq!(p.redacted_map()["cassandra.password"], "(redacted)");
        for (value, shown) in [
            (
                "jdbc:postgresql://h/db?user=u&password=PW",
                "jdbc:postgresql://h/db?user=u&password=(redacted)",
            ),
            (
                "jdbc:sqlserver://h;user=u;Password=PW;db=x",
                "jdbc:sqlserver://h;user=u;Password=(redacted);db=x",
            ),
            (
                "host=h password=PW dbname=d",
                "host=h password=(redacted) dbname=d",
            ),
            (
                "postgres://kv:PW@h/db?sslpassword=PW2&x=1",
                "postgres://kv:(redacted)@h/db?sslpassword=(redacted)&x=1",
            ),
            ("a=1&b=2", "a=1&b=2"),
            ("/data/password=1", "/data/password=1"),
            ("password=", "password="),
        ] {
            assert_eq!(redacted("db.url", value), shown, "{value}");
        }
        assert_eq!(
            redacted_arg("db.url=jdbc:postgresql://h/db?user=u&password=PW"),
            "db.url=jdbc:postgresql://h/db?user=u&password=(redacted)"
        );
        assert_eq!(
            redacted_arg("pg.conninfo=host=h password=PW"),
            "pg.conninfo=host=h password=(redacted)"
        );
    }

    #[test]
    fn a_url_password_with_at_colon_or_slash_never_shows() {
        for password in ["p@ss", "p:ss", "p/ss", "a@b:c/d@e"] {
            let url = format!("postgres://kv:{password}@127.0.0.1:5432/db?sslmode=disable");
            let shown = redacted("ferretdb_pg_url", &url);
            assert_eq!(
                shown, "postgres://kv:(redacted)@127.0.0.1:5432/db?sslmode=disable",
                "{password}"
            );
            let c = url_credentials(&url).unwrap();
            assert_eq!((c.user, c.password), ("kv", password));
        }
    }

    /// Pass 16: a host given as `user:PW@host`, without a scheme, was
    /// shown whole: in the `Command line:` header, the JSON's settings and
    /// an error quoting it ("cannot reach Redis at [u:PW@h]:6379").
    #[test]
    fn a_user_and_password_without_a_scheme_never_show() {
        assert_eq!(redacted("redis.host", "u:PW@h"), "u:(redacted)@h");
        assert_eq!(
            redacted("power.ipmi.host", "admin:P@W@[::1]:623"),
            "admin:(redacted)@[::1]:623"
        );
        for arg in [
            "-p=redis.host=u:PW@h",
            "redis.host=u:PW@h",
            "-predis.host=u:PW@h",
        ] {
            let shown = redacted_arg(arg);
            assert!(
                shown.ends_with("=u:(redacted)@h") && !shown.contains("PW"),
                "{shown}"
            );
        }
        assert_eq!(
            scrubbed_text("cannot reach Redis at [u:PW@127.0.0.1]:6379 (x); and 'a:PW@h', b:PW@h"),
            "cannot reach Redis at [u:(redacted)@127.0.0.1]:6379 (x); and 'a:(redacted)@h', b:(redacted)@h"
        );
        // Not a user and password: left as they are.
        for text in [
            "ops@h",
            "12:30",
            "dir/a:b@c",
            "k=a:b@c",
            "x @ y:z",
            "[fe80::1]:5432",
        ] {
            assert_eq!(redacted("k", text), text);
            assert_eq!(scrubbed_text(text), text);
        }
    }

    #[test]
    fn typed_getters_name_the_property() {
        let mut p = Properties::new();
        p.set("recordcount", "-5");
        p.set("operationcount", "ten");
        p.set("readallfields", "yes");
        let neg = p.u64("recordcount", 0).unwrap_err().to_string();
        assert!(
            neg.contains("recordcount") && neg.contains("negative"),
            "{neg}"
        );
        let nan = p.u64("operationcount", 0).unwrap_err().to_string();
        assert!(
            nan.contains("operationcount") && nan.contains("'ten'"),
            "{nan}"
        );
        assert!(p.bool("readallfields", true).is_err());
        p.set("fieldlength", "1k");
        p.set("maxexecutiontime", "1.5m");
        p.set("warmuptime", "ten");
        assert_eq!(p.size("fieldlength", 100).unwrap(), 1024);
        assert_eq!(
            p.duration("maxexecutiontime", Duration::ZERO).unwrap(),
            Duration::from_secs(90)
        );
        let bad = p
            .duration("warmuptime", Duration::ZERO)
            .unwrap_err()
            .to_string();
        assert!(bad.starts_with("property warmuptime: 'ten'"), "{bad}");
        assert_eq!(p.u64("absent", 7).unwrap(), 7);
    }
}
