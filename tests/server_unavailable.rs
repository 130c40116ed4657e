//! A test that needs a real server skips when this machine cannot start
//! it, except under CI, where the skip would pass a test that never ran.

use crate::common::server::cannot_start;

#[test]
fn a_server_that_cannot_start_skips_locally_and_fails_under_ci() {
    let why = "`kvperf server start redis` could not run it here: no redis-server";
    assert_eq!(
        cannot_start("t", why, None),
        Ok(format!("SKIPPED t: {why}"))
    );
    assert!(cannot_start("t", why, Some("false")).is_ok());
    for ci in ["true", "TRUE", "1"] {
        let failed = cannot_start("t", why, Some(ci)).unwrap_err();
        assert!(failed.starts_with("FAILED t: CI=true"), "{failed}");
        assert!(failed.ends_with(why), "the line says why: {failed}");
    }
}
