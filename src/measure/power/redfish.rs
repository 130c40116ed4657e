//! System power from a Redfish service (a BMC) over HTTP(S): one GET of a
//! resource with a power reading, by `curl`. Given the service root
//! (`https://bmc` or `https://bmc/redfish/v1`), the meter first walks as a
//! client of a real BMC must: the root's `Chassis` collection, its members
//! in order, the first chassis that links a power resource. A certificate
//! is checked against the system's CAs, or `power.redfish.cacert`, unless
//! `power.redfish.insecure`. The user and password come from
//! `KVPERF_REDFISH_USER` and `KVPERF_REDFISH_PASSWORD`, handed to curl as
//! a config on its standard input, so they are on no command line and in
//! no result or log). Three resources carry a reading: the deprecated
//! `Chassis/{id}/Power` (`PowerControl[].PowerConsumedWatts`), the newer
//! `Chassis/{id}/EnvironmentMetrics` (`PowerWatts.Reading`) and a power
//! supply's `PowerSubsystem/PowerSupplies/{id}/Metrics`
//! (`InputPowerWatts.Reading`).

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::command::output_within;
use super::{PowerMeter, Reading};

pub struct RedfishMeter {
    /// The URL as given, without its user and password.
    url: String,
    /// The URL as given, shown ([`crate::properties::redacted`]).
    given: String,
    /// The power resource's URL (curl's) and as shown, once found.
    resource: Option<(String, String)>,
    insecure: bool,
    /// A CA certificate (PEM) to trust for the service's certificate.
    cacert: Option<String>,
    deadline: Duration,
    /// `user = "…"` for curl's config, from the environment or the URL.
    credentials: Option<String>,
    /// The password, cut from anything curl says.
    password: Option<String>,
}

impl RedfishMeter {
    /// The meter of `url`. Its user and password, from
    /// `KVPERF_REDFISH_USER` and `KVPERF_REDFISH_PASSWORD` or from the
    /// URL's `user:password@`, reach curl only in the config it reads on
    /// its standard input: never its command line (`ps`), and no output
    /// shows the password.
    pub fn new(
        url: String,
        insecure: bool,
        cacert: Option<String>,
        deadline: Duration,
    ) -> Result<Self, String> {
        let shown = crate::properties::redacted("", &url);
        let (bare, in_url) = split_userinfo(&url);
        let user = std::env::var("KVPERF_REDFISH_USER").ok();
        let password = std::env::var("KVPERF_REDFISH_PASSWORD").ok();
        let (user, password) = match (user, password, in_url) {
            (Some(u), Some(p), None) => (Some(u), Some(p)),
            (None, None, in_url) => in_url.map_or((None, None), |(u, p)| (Some(u), Some(p))),
            (Some(_), Some(_), Some(_)) => {
                return Err(format!(
                    "{shown} holds a user and KVPERF_REDFISH_USER is set too: give one"
                ))
            }
            _ => {
                return Err(
                    "set both KVPERF_REDFISH_USER and KVPERF_REDFISH_PASSWORD, or neither".into(),
                )
            }
        };
        let credentials = user.as_ref().map(|u| {
            let p = password.as_deref().unwrap_or("");
            format!("user = \"{}:{}\"\n", quote(u), quote(p))
        });
        Ok(Self {
            url: bare,
            given: shown,
            resource: None,
            insecure,
            cacert,
            deadline,
            credentials,
            password: password.filter(|p| !p.is_empty()),
        })
    }

    /// curl's command for `url` within `limit` and the config it reads on
    /// its standard input: the URL and the credentials. No part of the URL
    /// is an argument: its query may hold one too (`?token=…`, pass 15).
    fn curl(&self, url: &str, limit: Duration) -> (Command, String) {
        let mut curl = Command::new("curl");
        // --globoff: a `[` or `{` in a URL is a character, not a range of
        // URLs to fetch in turn.
        curl.args(["--silent", "--show-error", "--fail", "--globoff"])
            .args(["--config", "-"])
            .args(["--header", "Accept: application/json"])
            .args(["--max-time", &format!("{:.3}", limit.as_secs_f64())]);
        if self.insecure {
            curl.arg("--insecure");
        } else if let Some(ca) = &self.cacert {
            curl.arg("--cacert").arg(ca);
        }
        let credentials = self.credentials.as_deref().unwrap_or_default();
        (curl, format!("url = \"{}\"\n{credentials}", quote(url)))
    }
}

/// `url` without its `user[:password]@`, and that user and password
/// (percent-decoded, as curl reads a URL's).
fn split_userinfo(url: &str) -> (String, Option<(String, String)>) {
    let Some((scheme, rest)) = url.split_once("://") else {
        return (url.to_string(), None);
    };
    // A password may hold `@` and `/` (as crate::properties::url_credentials
    // reads it); a user alone ends at the host.
    let with_password = crate::properties::url_credentials(url).is_some();
    match rest.rsplit_once('@') {
        Some((userinfo, host)) if with_password || !userinfo.contains('/') => {
            let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
            (
                format!("{scheme}://{host}"),
                Some((percent_decoded(user), percent_decoded(password))),
            )
        }
        _ => (url.to_string(), None),
    }
}

/// `text` with each `%XX` replaced by its byte.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A value inside double quotes of a curl config.
fn quote(text: &str) -> String {
    // A line break would end the value and start another option.
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
        .replace('\r', "\\r")
}

impl RedfishMeter {
    /// The JSON at `url`, or why not (the password cut out).
    fn get(&self, url: &str) -> Result<Value, String> {
        self.get_within(url, self.deadline)
    }

    /// [`RedfishMeter::get`] with curl given `limit` (and a second more).
    fn get_within(&self, url: &str, limit: Duration) -> Result<Value, String> {
        let (curl, config) = self.curl(url, limit);
        let scrub = |why: String| crate::properties::scrubbed(&why, self.password.as_deref());
        let body =
            output_within(curl, Some(config), limit + Duration::from_secs(1)).map_err(scrub)?;
        serde_json::from_str(&body).map_err(|e| format!("{url}: the resource is not JSON ({e})"))
    }

    /// The power resource: the URL given, or the one found from the
    /// service root (with the URL's form as shown).
    fn resource(&mut self) -> Result<(String, String), String> {
        if let Some(found) = &self.resource {
            return Ok(found.clone());
        }
        let (origin, path) = split_path(&self.url);
        let found = if matches!(path.trim_end_matches('/'), "" | "/redfish/v1") {
            let until = Instant::now() + WALK_LIMIT;
            let path = walk_to_power(&mut |p| {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(format!(
                        "the walk from the service root to a power resource took more than {} s; give power.redfish.url the resource itself (/redfish/v1/Chassis/ID/Power or .../EnvironmentMetrics)",
                        WALK_LIMIT.as_secs()
                    ));
                }
                self.get_within(&format!("{origin}{p}"), left.min(self.deadline))
            })?;
            let shown_origin = &self.given[..self.given.len() - split_path(&self.given).1.len()];
            (format!("{origin}{path}"), format!("{shown_origin}{path}"))
        } else {
            (self.url.clone(), self.given.clone())
        };
        self.resource = Some(found.clone());
        Ok(found)
    }
}

/// `scheme://authority` and the path (with query) of `url`.
fn split_path(url: &str) -> (&str, &str) {
    let after = url.find("://").map_or(0, |i| i + 3);
    // A password may hold `/`: the authority ends after the last `@`.
    let host_at = url[after..].rfind('@').map_or(after, |i| after + i + 1);
    match url[host_at..].find('/') {
        Some(i) => url.split_at(host_at + i),
        None => (url, ""),
    }
}

/// The longest the walk from the service root to a power resource may
/// take in all (each GET is also bounded by the interval): a hostile or
/// broken BMC listing 10^5 chassis took hours before the window.
const WALK_LIMIT: Duration = Duration::from_secs(60);
/// The most chassis the walk looks at: a real BMC lists a few (a blade
/// enclosure a few dozen).
const MAX_CHASSIS: usize = 64;

/// From the service root to a chassis's power resource, GETting each
/// path with `get`: `/redfish/v1/` → `Chassis` → each member in turn (the
/// first [`MAX_CHASSIS`]) → its `EnvironmentMetrics`, else its `Power`.
/// The path found, or why none.
fn walk_to_power(get: &mut dyn FnMut(&str) -> Result<Value, String>) -> Result<String, String> {
    let link = |v: &Value, field: &str| {
        v.get(field)
            .and_then(|l| l.get("@odata.id"))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let root = get("/redfish/v1/")?;
    let chassis = link(&root, "Chassis").ok_or("the service root links no Chassis collection")?;
    let chassis = on_service(chassis)?;
    let members = get(&chassis)?;
    let members: Vec<String> = members
        .get("Members")
        .and_then(Value::as_array)
        .map(|m| {
            m.iter()
                .filter_map(|c| c.get("@odata.id").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    for member in members.iter().take(MAX_CHASSIS) {
        let c = get(&on_service(member.clone())?)?;
        if let Some(power) = link(&c, "EnvironmentMetrics").or_else(|| link(&c, "Power")) {
            return on_service(power);
        }
    }
    if members.len() > MAX_CHASSIS {
        return Err(format!(
            "none of the first {MAX_CHASSIS} of the {} chassis in {chassis} links EnvironmentMetrics or Power (kvperf looks at {MAX_CHASSIS} at most); give power.redfish.url the power resource itself",
            members.len()
        ));
    }
    Err(format!(
        "none of the {} chassis in {chassis} links EnvironmentMetrics or Power",
        members.len()
    ))
}

/// `link` when it is a path on the service: each is appended to the
/// URL's origin, and one such as `@other:80/x` would name another host,
/// which curl would then send the BMC's user and password.
fn on_service(link: String) -> Result<String, String> {
    if link.starts_with('/') && !link.starts_with("//") {
        return Ok(link);
    }
    let shown: String = link.chars().take(80).collect();
    Err(format!(
        "the service links '{shown}', which is not a path on it; kvperf follows only paths on the host power.redfish.url names"
    ))
}

impl PowerMeter for RedfishMeter {
    fn name(&self) -> String {
        let shown = self.resource.as_ref().map_or(&self.given, |(_, s)| s);
        format!("redfish {shown}")
    }

    fn read(&mut self) -> Result<Reading, String> {
        let (url, _) = self.resource()?;
        let body = self.get(&url)?;
        parse_power(&body).map(Reading::Watts)
    }
}

/// The power reading in a Redfish resource's JSON text.
#[cfg(test)]
fn parse_power_watts(body: &str) -> Result<f64, String> {
    let v: Value =
        serde_json::from_str(body).map_err(|e| format!("the resource is not JSON ({e})"))?;
    parse_power(&v)
}

/// The power reading in a Redfish resource.
fn parse_power(v: &Value) -> Result<f64, String> {
    let number = |v: &Value| v.as_f64().filter(|w| w.is_finite() && *w >= 0.0);
    if let Some(controls) = v.get("PowerControl").and_then(Value::as_array) {
        return controls
            .iter()
            .find_map(|c| c.get("PowerConsumedWatts").and_then(number))
            .ok_or_else(|| "no PowerControl entry has a PowerConsumedWatts".to_string());
    }
    for field in ["PowerWatts", "InputPowerWatts"] {
        if let Some(reading) = v.get(field) {
            return reading
                .get("Reading")
                .and_then(number)
                .ok_or_else(|| format!("{field} has no Reading"));
        }
    }
    Err("no power reading in the resource (expected PowerControl[].PowerConsumedWatts, PowerWatts.Reading or InputPowerWatts.Reading)".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    // From DMTF's public Redfish mockups (github.com/DMTF/Redfish-Mockup-Server,
    // public-rackmount1/Chassis/1U/...), cut to the fields that matter and
    // one neighbour each; the figures are the mockups'.

    /// public-rackmount1/Chassis/1U/Power/index.json (#Power.v1_7_1.Power).
    const POWER: &str = r##"{
        "@odata.type": "#Power.v1_7_1.Power",
        "Id": "Power",
        "PowerControl": [{
            "@odata.id": "/redfish/v1/Chassis/1U/Power#/PowerControl/0",
            "MemberId": "0",
            "Name": "System Input Power",
            "PowerConsumedWatts": 344,
            "PowerRequestedWatts": 800,
            "PowerMetrics": {"IntervalInMin": 30, "MinConsumedWatts": 271,
                             "MaxConsumedWatts": 489, "AverageConsumedWatts": 319}
        }],
        "@odata.id": "/redfish/v1/Chassis/1U/Power"
    }"##;

    /// public-rackmount1/Chassis/1U/EnvironmentMetrics/index.json
    /// (#EnvironmentMetrics.v1_3_0.EnvironmentMetrics).
    const ENVIRONMENT: &str = r##"{
        "@odata.type": "#EnvironmentMetrics.v1_3_0.EnvironmentMetrics",
        "TemperatureCelsius": {"Reading": 39, "DataSourceUri": "/redfish/v1/Chassis/1U/Sensors/CPU1Temp"},
        "PowerWatts": {"Reading": 374, "DataSourceUri": "/redfish/v1/Chassis/1U/Sensors/TotalPower"},
        "PowerLimitWatts": {"SetPoint": 500, "AllowableMax": 1000}
    }"##;

    /// public-rackmount1/Chassis/1U/PowerSubsystem/PowerSupplies/Bay1/Metrics/index.json
    /// (#PowerSupplyMetrics.v1_0_1.PowerSupplyMetrics).
    const SUPPLY: &str = r##"{
        "@odata.type": "#PowerSupplyMetrics.v1_0_1.PowerSupplyMetrics",
        "InputVoltage": {"DataSourceUri": "/redfish/v1/Chassis/1U/Sensors/PS1InputVoltage", "Reading": 230.2},
        "InputPowerWatts": {"DataSourceUri": "/redfish/v1/Chassis/1U/Sensors/PS1InputPower", "Reading": 937.4},
        "EnergykWh": {"DataSourceUri": "/redfish/v1/Chassis/1U/Sensors/PS1Energy", "Reading": 325675}
    }"##;

    #[test]
    fn reads_each_resource_of_dmtfs_mockups() {
        assert_eq!(parse_power_watts(POWER), Ok(344.0));
        assert_eq!(parse_power_watts(ENVIRONMENT), Ok(374.0));
        assert_eq!(parse_power_watts(SUPPLY), Ok(937.4));
    }

    #[test]
    fn a_resource_without_a_reading_says_what_it_lacks() {
        let err = parse_power_watts(r#"{"Id": "1U", "ChassisType": "RackMount"}"#).unwrap_err();
        assert!(err.contains("expected PowerControl"), "{err}");
        let err = parse_power_watts(r#"{"PowerControl": [{"Name": "x"}]}"#).unwrap_err();
        assert!(err.contains("PowerConsumedWatts"), "{err}");
        assert!(parse_power_watts("<html>")
            .unwrap_err()
            .contains("not JSON"));
    }

    #[test]
    fn credentials_go_to_curls_config_quoted() {
        assert_eq!(quote(r#"pa"ss\word"#), r#"pa\"ss\\word"#);
        assert_eq!(quote("a\nb"), r"a\nb");
        let m = RedfishMeter::new(
            "https://root:secret@bmc/redfish/v1/Chassis/1/Power".into(),
            false,
            None,
            Duration::from_secs(1),
        )
        .unwrap();
        assert!(!m.name().contains("secret"), "{}", m.name());
        assert_eq!(
            m.name(),
            "redfish https://root:(redacted)@bmc/redfish/v1/Chassis/1/Power"
        );
    }

    /// A URL's user and password go to curl's config on its standard
    /// input, decoded; its arguments hold the URL without them.
    #[test]
    fn a_urls_credentials_never_reach_curls_arguments() {
        let m = RedfishMeter::new(
            "https://admin:p%40ss:w0rd/x@bmc:8443/redfish/v1/Chassis/1/Power".into(),
            true,
            None,
            Duration::from_secs(2),
        )
        .unwrap();
        let (curl, config) = m.curl(&m.url, Duration::from_secs(2));
        let args: Vec<String> = curl
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(
            args.iter()
                .all(|a| !a.contains("w0rd") && !a.contains("admin")),
            "{args:?}"
        );
        assert!(args.iter().all(|a| !a.contains("bmc")), "{args:?}");
        assert_eq!(
            config,
            "url = \"https://bmc:8443/redfish/v1/Chassis/1/Power\"\n\
             user = \"admin:p@ss:w0rd/x\"\n"
        );
        // A user alone is a user; a path's `@` is not one.
        assert_eq!(
            split_userinfo("http://ops@bmc/r"),
            ("http://bmc/r".into(), Some(("ops".into(), String::new())))
        );
        assert_eq!(
            split_userinfo("http://bmc/a@b"),
            ("http://bmc/a@b".into(), None)
        );
    }

    /// A credential in the URL's query (`?token=`, `api_key=`) reached
    /// curl's arguments with the URL (pass 15): now the URL, quoted, is in
    /// the config only, on one line whatever it holds.
    #[test]
    fn a_urls_query_never_reaches_curls_arguments() {
        for url in [
            "https://bmc/redfish/v1/Chassis/1/Power?token=T0KEN",
            "http://bmc:80/p?api_key=T0KEN&password=T0KEN#f",
            "https://u@bmc/p;sig=T0KEN?a[0]={T0KEN}",
            "https://bmc/p?x=\"T0KEN\\\n--insecure",
        ] {
            let m = RedfishMeter::new(url.into(), false, None, Duration::from_secs(1)).unwrap();
            let (curl, config) = m.curl(&m.url, Duration::from_secs(1));
            let args: Vec<String> = curl
                .get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            assert!(
                args.iter()
                    .all(|a| !a.contains("T0KEN") && !a.contains("bmc")),
                "{url}: {args:?}"
            );
            let first = config.lines().next().unwrap();
            assert_eq!(first, format!("url = \"{}\"", quote(&m.url)), "{url}");
            assert!(config.ends_with('\n') && !first.contains('\n'), "{config}");
        }
    }

    /// A Chassis collection of 100,000 members is walked to its first
    /// 64 only, said in one line (it was walked member by member, each
    /// GET bounded by the interval: hours before the window).
    #[test]
    fn a_huge_chassis_collection_is_walked_to_a_bound() {
        let members: Vec<Value> = (0..100_000)
            .map(|i| serde_json::json!({"@odata.id": format!("/redfish/v1/Chassis/{i}")}))
            .collect();
        let mut gets = 0;
        let err = walk_to_power(&mut |path| {
            gets += 1;
            Ok(match path {
                "/redfish/v1/" => {
                    serde_json::json!({"Chassis": {"@odata.id": "/redfish/v1/Chassis"}})
                }
                "/redfish/v1/Chassis" => serde_json::json!({ "Members": members }),
                _ => serde_json::json!({"Id": "no power here"}),
            })
        })
        .unwrap_err();
        assert_eq!(gets, 2 + MAX_CHASSIS, "{err}");
        assert!(
            err.contains("none of the first 64 of the 100000 chassis"),
            "{err}"
        );
    }
}
