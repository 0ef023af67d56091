//! `tracecast probe` on a machine without the NVIDIA driver: one clear line
//! on stderr, nothing on stdout, no file written, exit code 4.

use std::process::Command;

fn tracecast() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tracecast"))
}

#[test]
fn probe_without_a_driver_fails_cleanly_with_its_own_code() {
    if tracecast_probe::driver_present() {
        eprintln!("NOTE: skipped: libcuda is present here; this test checks the no-driver path");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("gpu.toml");
    for args in [
        vec!["probe"],
        vec!["probe", "--quick", "--out", out_file.to_str().unwrap()],
    ] {
        let out = tracecast().args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{args:?}: stderr: {stderr}");
        assert_eq!(
            stderr, "no CUDA driver found: tracecast probe needs an NVIDIA GPU\n",
            "{args:?}"
        );
        assert!(
            out.stdout.is_empty(),
            "{args:?}: stdout: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    assert!(!out_file.exists(), "no profile may be written without a GPU");
}

#[test]
fn probe_help_teaches_the_options() {
    let out = tracecast().args(["probe", "--help"]).output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for needle in ["--out", "--quick", "--device", "fixtures/hardware", "exits with code 4"] {
        assert!(help.contains(needle), "help lacks {needle}:\n{help}");
    }
}
