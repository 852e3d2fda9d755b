//! Short runs of every scenario: the invariants hold under `Patched` (also with faults
//! injected), and `Legacy` shows the invisibility seed 001 fixes. No timing is asserted. One
//! test, so the runs do not compete with each other for the cores.

use nohz::{Legacy, Patched, Scalable};
use nohz_stress::scenario::{RunConfig, Scenario, run};
use nohz_stress::sim::Faults;

fn cfg(scenario: Scenario, cpus: usize, faults: Faults) -> RunConfig {
    RunConfig::new(scenario, cpus, 0.4, faults, true)
}

#[test]
fn short_runs_of_every_scenario() {
    for scenario in Scenario::ALL {
        let st = run::<Patched, 1000>(&cfg(scenario, scenario.min_cpus() + 1, Faults::standard()))
            .unwrap();
        assert_eq!(st.policy, "patched");
        assert_eq!(st.invariant_violations, 0, "{scenario:?}: {st:?}");
        assert_eq!(st.warnings, 0, "{scenario:?}: {st:?}");
        assert_eq!(st.invisible_idle_ticks, 0, "{scenario:?}: {st:?}");
    }

    // The faults take CPUs offline and back mid-run (the idle loop of the dying CPU running
    // during its grace period, kicks in flight, the timekeeper among them): the hotplug
    // invariants were checked and held.
    for scenario in [Scenario::Churn, Scenario::Visibility] {
        let cpus = scenario.min_cpus() + 1;
        let a = run::<Patched, 1000>(&cfg(scenario, cpus, Faults::standard())).unwrap();
        let b = run::<Scalable, 1000>(&cfg(scenario, cpus, Faults::standard())).unwrap();
        for st in [a, b] {
            assert!(st.hotplug_cycles > 0, "{scenario:?}: {st:?}");
            assert!(
                st.hotplug_checks >= 3 * st.hotplug_cycles,
                "{scenario:?}: {st:?}"
            );
            assert_eq!(st.invariant_violations, 0, "{scenario:?}: {st:?}");
            assert_eq!(st.warnings, 0, "{scenario:?}: {st:?}");
        }
    }

    // Before seed 001 the idle NO_HZ_FULL CPUs (tick stopped while they ran) stay out of the
    // idle mask: every sampled tick of their idle time is invisible.
    let legacy = run::<Legacy, 1000>(&cfg(Scenario::Visibility, 4, Faults::default())).unwrap();
    assert!(legacy.invisible_idle_ticks > 0, "{legacy:?}");
    assert_eq!(
        legacy.invariant_violations + legacy.warnings,
        0,
        "{legacy:?}"
    );

    let churn = run::<Legacy, 250>(&cfg(Scenario::Churn, 2, Faults::default())).unwrap();
    assert!(churn.pair_ns.is_some_and(|ns| ns > 0.0), "{churn:?}");
    assert!(churn.idle_transitions > 0, "{churn:?}");
    let irq = run::<Patched, 1000>(&cfg(Scenario::Irqtime, 2, Faults::default())).unwrap();
    assert!(irq.irq_ns_per_call.is_some_and(|ns| ns > 0.0), "{irq:?}");
}
