//! Engine options: `-p <engine>.<name>=value`, declared once per engine
//! with their default and meaning. The declaration serves `kvperf engines`,
//! the did-you-mean check of unknown names, typed reading, and the
//! effective values recorded in every result.

use std::collections::BTreeMap;

use super::EngineSpec;
use crate::error::{did_you_mean, InputError};
use crate::properties::{parse_u64, redacted, Properties};

/// One option an engine understands.
#[derive(Debug, Clone, Copy)]
pub struct EngineOption {
    pub name: &'static str,
    /// Text of the default value; "" for "not set".
    pub default: &'static str,
    pub help: &'static str,
}

/// An engine's options as given, over the declared defaults.
pub struct OptionValues<'a> {
    engine: &'static str,
    declared: &'static [EngineOption],
    props: &'a Properties,
}

impl<'a> OptionValues<'a> {
    pub fn new(spec: &'static EngineSpec, props: &'a Properties) -> Self {
        Self {
            engine: spec.name,
            declared: spec.options,
            props,
        }
    }

    /// The engine whose options these are (its name).
    pub fn engine(&self) -> &'static str {
        self.engine
    }

    /// The property that sets option `name`: `<engine>.<name>`.
    pub fn key(&self, name: &str) -> String {
        format!("{}.{name}", self.engine)
    }

    /// Whether `-p <engine>.<name>` was given (even as "").
    pub fn is_given(&self, name: &str) -> bool {
        self.props.contains(&self.key(name))
    }

    /// The given text, else the declared default.
    pub fn text(&self, name: &str) -> String {
        let declared = self.declared.iter().find(|o| o.name == name);
        debug_assert!(declared.is_some(), "option {name} is not declared");
        self.props
            .get(&self.key(name))
            .map(str::to_string)
            .unwrap_or_else(|| declared.map_or("", |o| o.default).to_string())
    }

    pub fn u64(&self, name: &str) -> Result<u64, InputError> {
        parse_u64(&self.key(name), &self.text(name))
    }

    /// A whole number no larger than `max` (sizes that allocate).
    pub fn u64_at_most(&self, name: &str, max: u64) -> Result<u64, InputError> {
        let v = self.u64(name)?;
        if v > max {
            return Err(InputError::property(
                &self.key(name),
                format!("{v} is more than the largest allowed value, {max}"),
            ));
        }
        Ok(v)
    }

    /// Bytes no more than `max`, with fio's or IEC/SI units (`64m`, `4KiB`).
    pub fn size_at_most(&self, name: &str, max: u64) -> Result<u64, InputError> {
        let key = self.key(name);
        let v = crate::units::parse_size(&self.text(name))
            .map_err(|e| InputError::property(&key, e))?;
        if v > max {
            return Err(InputError::property(
                &key,
                format!("{v} is more than the largest allowed value, {max}"),
            ));
        }
        Ok(v)
    }

    pub fn f64(&self, name: &str) -> Result<f64, InputError> {
        let text = self.text(name);
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(InputError::property(
                &self.key(name),
                format!("'{text}' is not a number"),
            )),
        }
    }

    pub fn bool(&self, name: &str) -> Result<bool, InputError> {
        match self.text(name).as_str() {
            t if t.eq_ignore_ascii_case("true") => Ok(true),
            t if t.eq_ignore_ascii_case("false") => Ok(false),
            t => Err(InputError::property(
                &self.key(name),
                format!("'{t}' is not true or false"),
            )),
        }
    }

    /// One of `choices`.
    pub fn choice(&self, name: &str, choices: &[&str]) -> Result<String, InputError> {
        let text = self.text(name);
        if choices.contains(&text.as_str()) {
            return Ok(text);
        }
        let hint = did_you_mean(&text, choices.iter().copied())
            .map(|c| format!(" (did you mean '{c}'?)"))
            .unwrap_or_default();
        Err(InputError::property(
            &self.key(name),
            format!("'{text}' is not one of {}{hint}", choices.join(", ")),
        ))
    }

    /// Every declared option with its effective text: what a result
    /// records (credentials redacted).
    pub fn effective(&self) -> BTreeMap<String, String> {
        self.declared
            .iter()
            .map(|o| (o.name.to_string(), redacted(o.name, &self.text(o.name))))
            .collect()
    }
}

/// Sets `<engine>.<name>` unless the user gave it with -p: an option the
/// engine maps a db_bench flag onto yields to the option itself.
pub fn set_unless_given(props: &mut Properties, spec: &EngineSpec, name: &str, value: &str) {
    let key = format!("{}.{name}", spec.name);
    if !props.contains(&key) {
        props.set(&key, value);
    }
}

/// An engine's own options are kvperf's, so a typo there is an error, not
/// a pass-through (unlike unknown YCSB properties).
pub fn check_names(spec: &EngineSpec, props: &Properties) -> Result<(), InputError> {
    let prefix = format!("{}.", spec.name);
    let names: Vec<&str> = spec.options.iter().map(|o| o.name).collect();
    for (name, _) in props.with_prefix(&prefix) {
        if !names.contains(&name) {
            let hint = did_you_mean(name, names.iter().copied())
                .map(|n| format!(" (did you mean '{prefix}{n}'?)"))
                .unwrap_or_default();
            let known = if names.is_empty() {
                format!("{} takes no options", spec.name)
            } else {
                format!("known: {}", names.join(", "))
            };
            return Err(InputError::Invalid(format!(
                "unknown {} option '{prefix}{name}'{hint}; {known}",
                spec.name
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_mapped_onto_an_option_yields_to_the_option_given() {
        let spec = &super::super::embedded::null::SPEC;
        let mut props = Properties::new();
        props.set("null.mine", "given");
        set_unless_given(&mut props, spec, "mine", "from a flag");
        set_unless_given(&mut props, spec, "other", "from a flag");
        assert_eq!(props.get("null.mine"), Some("given"));
        assert_eq!(props.get("null.other"), Some("from a flag"));
    }
}
