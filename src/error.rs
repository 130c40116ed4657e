//! Errors a user can fix: bad flags, bad properties, bad paths.
//!
//! Everything kvperf reports ends as one line on stderr (see `main.rs`).
//! Bad input exits with [`EXIT_INPUT`] (2); a run that failed (an engine or
//! device error, a data-integrity failure, a step of a plan) exits with
//! [`EXIT_RUN`] (3); `kvperf compare --fail-if-slower` that finds a
//! regression exits with [`EXIT_REGRESSION`] (4). This type exists so library code can say *which*
//! input was wrong without formatting decisions leaking into it.

use thiserror::Error;

/// Exit code of bad input.
pub const EXIT_INPUT: u8 = 2;
/// Exit code of a run that failed.
pub const EXIT_RUN: u8 = 3;
/// Exit code of `kvperf compare --fail-if-slower` when a compared figure
/// is slower than the base by more than the limit, with 95% confidence.
pub const EXIT_REGRESSION: u8 = 4;

/// The regression gate failed: the message names the figures.
#[derive(Debug, Error)]
#[error("{0}")]
pub struct Regression(pub String);

#[derive(Debug, Error)]
pub enum InputError {
    #[error("property {name}: {message}")]
    Property { name: String, message: String },
    #[error("{0}")]
    Invalid(String),
}

impl InputError {
    pub fn property(name: &str, message: impl Into<String>) -> Self {
        InputError::Property {
            name: name.to_string(),
            message: message.into(),
        }
    }
}

/// [`EXIT_REGRESSION`] for a failed gate, [`EXIT_INPUT`] when bad input
/// caused `err` (anywhere in its chain), else [`EXIT_RUN`].
pub fn exit_code(err: &anyhow::Error) -> u8 {
    if err.chain().any(|e| e.is::<Regression>()) {
        EXIT_REGRESSION
    } else if err.chain().any(|e| e.is::<InputError>()) {
        EXIT_INPUT
    } else {
        EXIT_RUN
    }
}

/// The closest candidate within two edits (Levenshtein: insertions,
/// deletions, substitutions of characters), for "did you mean" hints.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    // No candidate whose length differs by more than two is within two
    // edits: not measured (a name of 1 MB took 2 s against each list).
    let len = word.chars().count();
    candidates
        .into_iter()
        .filter(|c| c.chars().count().abs_diff(len) <= 2)
        .map(|c| (strsim::levenshtein(word, c), c))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn suggests_one_typo_away() {
        let known = ["recordcount", "operationcount", "fieldcount"];
        assert_eq!(did_you_mean("recordcont", known), Some("recordcount"));
        assert_eq!(did_you_mean("zzz", known), None);
        // A swap is two edits; three are too many.
        assert_eq!(did_you_mean("fieldcuont", known), Some("fieldcount"));
        assert_eq!(did_you_mean("fildcuont", known), None);
        // The nearest wins, counted in characters, not bytes.
        assert_eq!(did_you_mean("ab", ["abcd", "abc"]), Some("abc"));
        assert_eq!(did_you_mean("fieldcoünt", known), Some("fieldcount"));
    }

    #[test]
    fn input_errors_keep_their_code_under_context() {
        let input: anyhow::Result<()> = Err(InputError::Invalid("bad".into()).into());
        assert_eq!(exit_code(&input.context("step x").unwrap_err()), EXIT_INPUT);
        let run: anyhow::Result<()> = Err(anyhow::anyhow!("disk on fire"));
        assert_eq!(exit_code(&run.context("step x").unwrap_err()), EXIT_RUN);
        let slower = anyhow::Error::from(Regression("slower".into())).context("compare");
        assert_eq!(exit_code(&slower), EXIT_REGRESSION);
    }
}
