//! The ILB pass's fence (`nohz.ilb.clear_fence`) removed at run time: the soak's O1 check
//! catches the pass that missed a registering CPU. Probe builds only (the switch exists
//! there): `RUSTFLAGS='--cfg nohz_probe' CARGO_TARGET_DIR=target/probe cargo test --release
//! -p nohz-stress --test fence`. Detection is probabilistic (a store-buffer race): the test
//! runs until caught, up to 2 * 10^8 transitions. Its own test binary, so the machine-wide
//! weakening touches no other test.

#![cfg(nohz_probe)]

use nohz::Patched;
use nohz_stress::scenario::{RunConfig, Scenario, run};
use nohz_stress::sim::{Faults, Plant};

#[test]
fn the_missing_ilb_fence_is_caught() {
    let mut total = 0;
    for _ in 0..20 {
        let mut cfg = RunConfig::new(Scenario::Soak, 2, 3600.0, Faults::default(), true);
        cfg.transitions = Some(10_000_000);
        cfg.plant = Plant::IlbFence;
        let st = run::<Patched, 1000>(&cfg).unwrap();
        if let Some(first) = &st.first_violation {
            assert!(first.starts_with("O1"), "{first}");
            eprintln!(
                "caught after {} transitions",
                total + st.violation_after_transitions.unwrap_or(0)
            );
            return;
        }
        total += st.transitions;
    }
    panic!("the missing fence was not caught in {total} transitions");
}
