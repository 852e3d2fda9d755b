//! The soak's invariant checks on the crate as it is (no violation) and on planted bugs
//! (caught). Count-based: each run stops after a number of idle transitions; nothing timed.

use nohz::Patched;
use nohz_stress::scenario::{RunConfig, RunStats, Scenario, run};
use nohz_stress::sim::{Faults, Plant};

fn soak(plant: Plant, transitions: u64) -> RunStats {
    let mut cfg = RunConfig::new(Scenario::Soak, 2, 3600.0, Faults::standard(), true);
    cfg.transitions = Some(transitions);
    cfg.plant = plant;
    run::<Patched, 1000>(&cfg).unwrap()
}

/// Runs until the checks catch `plant` (at most `rounds` runs of `transitions`).
fn caught(plant: Plant, transitions: u64, rounds: u32) -> RunStats {
    for _ in 0..rounds {
        let st = soak(plant, transitions);
        if st.invariant_violations + st.warnings > 0 {
            return st;
        }
    }
    panic!("{plant:?} not caught in {rounds} runs of {transitions} transitions");
}

#[test]
fn the_soak_checks_hold_and_catch_planted_bugs() {
    let st = soak(Plant::None, 100_000);
    assert!(st.transitions >= 100_000, "{st:?}");
    assert!(st.checks > 0 && st.snapshots > 0, "{st:?}");
    assert!(st.kicks_sent > 0 && st.ilb_passes > 0, "{st:?}");
    assert!(st.faults_injected > 0, "{st:?}");
    assert_eq!(st.invariant_violations, 0, "{st:?}");
    assert_eq!(st.warnings, 0, "{st:?}");
    assert_eq!(st.first_violation, None);

    // The hotplug fix reverted: the dying CPU's idle loop registers it during the grace
    // period, and a deactivated CPU sits in the idle mask.
    let st = caught(Plant::HotplugOrder, 200_000, 5);
    assert!(st.hotplug_cycles > 0, "{st:?}");
    let first = st.first_violation.as_deref().unwrap();
    assert!(first.contains("deactivated CPU"), "{first}");

    // A csd never released: the next snapshot sees it busy with no kick bits and no IPI.
    let st = caught(Plant::CsdLeak, 20_000, 5);
    let first = st.first_violation.as_deref().unwrap();
    assert!(first.contains("csd"), "{first}");
}
