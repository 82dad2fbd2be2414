//! The binary as a user runs it: a failed expectation makes the exit status 1 and
//! names the check; bad flags and an unusable output directory exit with 2.

use std::path::PathBuf;
use std::process::{Command, Output};

fn gameday(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_seawall-gameday"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn out_dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn a_failed_expectation_exits_1_and_names_the_check() {
    // At 5 requests/s the breaker's 2 s window never holds its minimum of 20 calls,
    // so it cannot open in the 50 % errors phase: that expectation must fail
    // (`--below-checked-range`: without it the flags are refused, exit 2).
    let dir = out_dir("gameday-slow-rate");
    let o = gameday(&[
        "--rate",
        "5",
        "--phase-secs",
        "1",
        "--seed",
        "3",
        "--below-checked-range",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stdout.contains("FAIL breaker-opened-under-errors"),
        "{stdout}"
    );
    assert!(stderr.contains("gameday FAILED"), "{stderr}");
    assert!(stderr.contains("breaker-opened-under-errors"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    // The table and both files are there all the same.
    assert!(stdout.contains("6 recovery"), "{stdout}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("gameday-report.json")).unwrap()).unwrap();
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "breaker-opened-under-errors")
        .unwrap();
    assert_eq!(check["passed"], false);
    assert_eq!(report["phases"].as_array().unwrap().len(), 6);
    // 5 requests/s for 1 s per phase, to each service.
    assert_eq!(report["phases"][0]["services"]["protected"]["requests"], 5);
    let svg = std::fs::read_to_string(dir.join("gameday.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("circuit breaker state"));
}

#[test]
fn bad_flags_are_usage_errors() {
    for (args, mentions) in [
        (&["--rate", "0"][..], "--rate"),
        (&["--rate", "19"], "--rate 19 is below 20"),
        (&["--phase-secs", "2"], "--phase-secs 2 is below 3"),
        (&["--phase-secs", "100"], "--phase-secs"),
        (&["--seed", "x"], "--seed"),
        (&["--frobnicate"], "--frobnicate"),
    ] {
        let o = gameday(args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(mentions), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn an_unusable_output_directory_exits_2() {
    let dir = out_dir("gameday-out-is-a-file");
    std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
    std::fs::write(&dir, "not a directory").unwrap();
    let o = gameday(&["--quick", "--out", dir.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("error: creating the output directory"),
        "{stderr}"
    );
}

/// `--target` end to end, briefly: the built-in protected service (it has no
/// Prometheus endpoint) calls its dependency through the binary's proxy. What it
/// does not expose is reported as not checked; the proxy's counts are in the JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_run_through_the_proxy() {
    use seawall_gameday::protected::{self, Protected};
    use seawall_gameday::settings::Settings;
    use std::sync::Arc;
    // A free port for the proxy: bound, then released for the binary to take.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dependency = format!("http://127.0.0.1:{port}");
    let state = Arc::new(Protected::new(Settings::GAMEDAY, dependency, 5).unwrap());
    let service = protected::start(state).await.unwrap();
    let dir = out_dir("gameday-target-run");
    let args: Vec<String> = [
        "--target",
        &service.base_url(),
        "--upstream",
        "builtin",
        "--proxy-listen",
        &format!("127.0.0.1:{port}"),
        "--rate",
        "5",
        "--phase-secs",
        "1",
        "--below-checked-range",
        "--out",
        dir.to_str().unwrap(),
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    let o = tokio::task::spawn_blocking(move || {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        gameday(&a)
    })
    .await
    .unwrap();
    service.stop(std::time::Duration::from_secs(3)).await;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    // At 5 requests/s in 1 s phases some decided checks fail (exit 1), never a crash.
    assert!(matches!(o.status.code(), Some(0 | 1)), "{stdout}\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    for line in [
        "NOT CHECKED breaker-opened-under-errors",
        "NOT CHECKED breaker-closed-in-recovery",
        "NOT CHECKED retries-within-budget",
    ] {
        assert!(stdout.contains(line), "{line}: {stdout}");
    }
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("gameday-report.json")).unwrap()).unwrap();
    assert_eq!(r["rows"], serde_json::json!(["direct", "target"]));
    assert_eq!(r["target"]["upstream"], "builtin");
    let calls = r["target"]["proxy_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 6);
    // The baseline: 5 requests to each row, and each direct request is one call
    // through the proxy; the target made at least one call per request (its
    // retries aside, a healthy dependency answers the first).
    assert_eq!(r["phases"][0]["services"]["protected"]["requests"], 5);
    assert_eq!(calls[0]["direct"], 5);
    assert_eq!(calls[0]["target"], 5);
    let skipped: Vec<&str> = r["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["checked"] == false)
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        skipped,
        [
            "breaker-opened-under-errors",
            "breaker-closed-in-recovery",
            "retries-within-budget"
        ]
    );
}
