//! What must not build. A zero-word `CpuMask` is rejected at compile time: the fixture crate
//! `tests/fixtures/zero_word_mask` (its own workspace) is built for real, with `cargo build`
//! (the check is a const assertion evaluated at monomorphization, which `cargo check` never
//! reaches), into `target/fixtures`, offline when the dependencies are already cached.
//!
//! The control build (`--features one-word`) must succeed, so a failure of the others is the
//! assertion's and not the environment's.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The crate's const-assert message for a mask of 0 or more than 128 words.
const MESSAGE: &str = "a CpuMask needs 1..=128 words";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> PathBuf {
    root().join("tests").join("fixtures").join(name)
}

fn cargo_build(name: &str, features: &[&str], offline: bool) -> Output {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.arg("build")
        .arg("--manifest-path")
        .arg(fixture(name).join("Cargo.toml"))
        .arg("--color=never")
        .env("CARGO_TARGET_DIR", root().join("target").join("fixtures"));
    if offline {
        cmd.arg("--offline");
    }
    if !features.is_empty() {
        cmd.arg("--features").arg(features.join(","));
    }
    cmd.output().expect("cargo runs")
}

fn build_fixture(name: &str, features: &[&str]) -> (bool, String) {
    // Start from the workspace's lock file, so the fixture resolves to the versions already
    // downloaded (the file is ignored by the fixture's .gitignore).
    let lock = fixture(name).join("Cargo.lock");
    if !lock.exists() {
        let _ = std::fs::copy(root().join("Cargo.lock"), &lock);
    }
    let mut out = cargo_build(name, features, true);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() && !stderr.contains(MESSAGE) && stderr.contains("offline") {
        // Nothing cached on this machine yet: let cargo fetch the three dependencies.
        out = cargo_build(name, features, false);
    }
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn build(features: &[&str]) -> (bool, String) {
    build_fixture("zero_word_mask", features)
}

#[test]
fn a_zero_word_mask_does_not_build() {
    let (ok, log) = build(&["one-word"]);
    assert!(ok, "the one-word control must build:\n{log}");

    let (ok, log) = build(&[]);
    assert!(!ok, "a zero-word CpuMask built:\n{log}");
    assert!(
        log.contains(MESSAGE),
        "the build failed, but not on the word-count assertion:\n{log}"
    );
    assert!(log.contains("error"), "{log}");

    let (ok, log) = build(&["too-many-words"]);
    assert!(!ok && log.contains(MESSAGE), "a 129-word CpuMask:\n{log}");
}

/// Without the `testing` feature a kernel's only source of CPU counts, and so of `CpuId`s, is
/// its machine: `NrCpuIds::new`, `NrCpuIds::full` and a count cell of its own do not exist
/// (fixture `tests/fixtures/forged_cpu_id`; the control takes the machine's count).
#[test]
fn a_cpu_count_cannot_be_forged_outside_testing() {
    let (ok, log) = build_fixture("forged_cpu_id", &["from-machine"]);
    assert!(ok, "the machine's own count must build:\n{log}");
    for (features, what) in [
        (&[][..], "NrCpuIds::new"),
        (&["full"][..], "NrCpuIds::full"),
        (&["cell"][..], "NrCpuIdsCell"),
    ] {
        let (ok, log) = build_fixture("forged_cpu_id", features);
        assert!(!ok, "{what} built outside the testing feature:\n{log}");
        assert!(
            log.contains("error[E0599]")
                || log.contains("error[E0603]")
                || log.contains("error[E0433]")
                || log.contains("error[E0624]"),
            "{what}: the build failed, but not on a missing or private item:\n{log}"
        );
    }
}
