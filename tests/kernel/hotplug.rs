//! CPU deactivation, the dying CPU's flush, and the domain rebuild (spec §5.3, §5.6).

use crate::{World, both};
use nohz::nohz::{KickOutcome, TopologyError};
use nohz::testing::Event;
use nohz::{NohzFlags, Policy};

fn deactivate_leaves_the_mask_then_waits_for_kickers<P: Policy>() {
    let w = World::<P>::new(4);
    w.enter(2);
    w.p.take_events();
    w.m.cpu_deactivate(w.cpu(2), &w.p);
    assert!(w.mask().is_empty());
    assert_eq!(w.events(), [Event::SynchronizeRcu]);
    // Once inactive it never registers again until reactivated.
    w.p.set_active(w.cpu(2), false);
    w.enter(2);
    assert!(w.mask().is_empty());
}

fn dying_cpu_runs_its_queued_kick_so_nothing_is_stuck<P: Policy>() {
    let w = World::<P>::new(4);
    w.enter(3);
    assert_eq!(
        w.m.kick_ilb(w.cpu(0), NohzFlags::STATS, &w.p),
        KickOutcome::Sent(w.cpu(3))
    );
    // CPU 3 goes down before the IPI is handled.
    w.m.cpu_deactivate(w.cpu(3), &w.p);
    w.p.set_active(w.cpu(3), false);
    w.m.cpu_dying(w.cpu(3), &w.p);
    let rq = w.m.rq(w.cpu(3));
    assert!(!rq.csd_busy());
    assert_eq!(rq.nohz_flags().load(), NohzFlags::empty());
    // Back online and idle again: the first kick owns the csd and sends.
    w.p.set_active(w.cpu(3), true);
    w.enter(3);
    assert_eq!(
        w.m.kick_ilb(w.cpu(0), NohzFlags::STATS, &w.p),
        KickOutcome::Sent(w.cpu(3))
    );
    assert_eq!(w.warnings(), 0);
    // With nothing queued, the flush does nothing.
    w.m.nohz_csd_ipi(w.cpu(3), &w.p);
    w.p.take_events();
    w.m.cpu_dying(w.cpu(3), &w.p);
    assert!(w.events().is_empty());
}

fn rebuild_resets_busy_counts_and_idle_cpus_are_not_counted_twice<P: Policy>() {
    let w = World::<P>::with_llcs(4, 2);
    w.enter(1);
    w.enter(3);
    assert_eq!((w.busy_count(0), w.busy_count(2)), (1, 1));
    w.m.rebuild_sched_domains(&w.p).unwrap();
    assert_eq!(
        (w.busy_count(0), w.busy_count(2)),
        (2, 2),
        "reset to the LLC weight"
    );
    assert_eq!(w.mask(), [1, 3], "the mask is not touched");
    assert!(!w.m.rq(w.cpu(1)).nohz_idle());
    // CPU 1 leaves: already counted busy, so no increment.
    w.busy(1, 1);
    w.tick(1);
    assert_eq!(w.busy_count(0), 2);
    // CPU 3 re-enters idle while registered: idempotent path, not counted idle again.
    w.m.enter_idle(w.cpu(3), &w.p);
    assert_eq!(w.busy_count(2), 2);
}

fn a_lone_cpu_has_no_llc_domain_and_a_domainless_cpu_is_not_in_one<P: Policy>() {
    // LLCs {0, 1} {2} {3, 4, 5}, answered as the hardware sees them.
    let w = World::<P>::new(6);
    for (cpu, leader) in [(0, 0), (1, 0), (2, 2), (3, 3), (4, 3), (5, 3)] {
        w.p.set_llc(w.cpu(cpu), Some(w.cpu(leader)));
    }
    // CPU 4 is isolated: no base domain, so no LLC domain and no place in LLC 3's span.
    w.p.set_sched_domain(w.cpu(4), false);
    w.m.rebuild_sched_domains(&w.p).unwrap();
    let llc = |i| w.m.llc_nr_busy_cpus(w.cpu(i));
    let leader = |i| w.m.rq(w.cpu(i)).llc_leader();
    assert_eq!((leader(0), leader(1), llc(1)), (Some(0), Some(0), Some(2)));
    assert_eq!(
        (leader(2), llc(2)),
        (None, None),
        "a span of one CPU is degenerate"
    );
    assert_eq!(
        (leader(4), llc(4)),
        (None, None),
        "no base domain, no LLC domain"
    );
    assert_eq!(llc(3), Some(2), "LLC 3 counts CPUs 3 and 5 only");
    // The lone CPU registers and leaves without a busy count; the others keep theirs.
    w.enter(2);
    w.enter(5);
    assert_eq!(w.mask(), [2, 5]);
    assert!(
        !w.m.rq(w.cpu(2)).nohz_idle(),
        "never counted idle: it has no LLC"
    );
    assert_eq!(llc(3), Some(1));
    // Once CPU 3 is isolated too, CPU 5 is alone: its domain degenerates on the next rebuild.
    w.p.set_sched_domain(w.cpu(3), false);
    w.m.rebuild_sched_domains(&w.p).unwrap();
    assert_eq!((leader(3), leader(5), llc(5)), (None, None, None));
    // Both back: LLC 3 spans 3, 4 and 5 again, all busy in the fresh domain.
    w.p.set_sched_domain(w.cpu(3), true);
    w.p.set_sched_domain(w.cpu(4), true);
    w.m.rebuild_sched_domains(&w.p).unwrap();
    assert_eq!((leader(4), llc(4)), (Some(3), Some(3)));
    assert_eq!(w.warnings(), 0);
}

fn inconsistent_topology_is_refused_and_changes_nothing<P: Policy>() {
    let w = World::<P>::with_llcs(4, 2);
    w.p.set_llc(w.cpu(1), Some(w.cpu(3)));
    assert_eq!(
        w.m.rebuild_sched_domains(&w.p),
        Err(TopologyError::BadLlcLeader { cpu: 1, leader: 3 })
    );
    w.p.set_llc(w.cpu(1), Some(w.cpu(0)));
    w.p.set_llc(w.cpu(0), Some(w.cpu(1)));
    assert!(w.m.rebuild_sched_domains(&w.p).is_err());
    assert_eq!(w.m.rq(w.cpu(1)).llc_leader(), Some(0), "old topology kept");
    assert_eq!(w.busy_count(1), 2);
}

both!(
    deactivate_leaves_the_mask_then_waits_for_kickers,
    dying_cpu_runs_its_queued_kick_so_nothing_is_stuck,
    rebuild_resets_busy_counts_and_idle_cpus_are_not_counted_twice,
    a_lone_cpu_has_no_llc_domain_and_a_domainless_cpu_is_not_in_one,
    inconsistent_topology_is_refused_and_changes_nothing,
);

#[test]
fn init_refuses_bad_input_and_a_second_call() {
    use nohz::nohz::InitError;
    use nohz::testing::HostPlatform;
    use nohz::{CpuError, Jiffies, Machine, NrCpuIds, Patched};
    let p = HostPlatform::<8>::new(NrCpuIds::full(), Jiffies::new(0));
    let m = Machine::<Patched, 8, 1>::new();
    assert!(matches!(
        m.init(9, 0, &p),
        Err(InitError::Cpus(CpuError::TooManyCpus { .. }))
    ));
    assert!(m.init(0, 0, &p).is_err());
    assert!(
        matches!(
            m.init(8, 8, &p),
            Err(InitError::Cpus(CpuError::OutOfRange {
                index: 8,
                nr_cpu_ids: 8
            }))
        ),
        "a boot CPU the machine does not have"
    );
    let nr = NrCpuIds::<8>::full();
    p.set_llc(nr.cpu(2).unwrap(), Some(nr.cpu(5).unwrap()));
    assert!(matches!(m.init(8, 0, &p), Err(InitError::Topology(_))));
    assert_eq!(m.nr_cpu_ids().get(), 0, "refused inits change nothing");
    p.set_llc(nr.cpu(2).unwrap(), Some(nr.cpu(0).unwrap()));
    assert_eq!(m.init(8, 5, &p).unwrap().get(), 8);
    assert_eq!(
        m.tick_do_timer_cpu().map(|c| c.index()),
        Some(5),
        "the boot CPU the caller named keeps time"
    );
    assert!(matches!(
        m.init(8, 0, &p),
        Err(InitError::Cpus(CpuError::AlreadyInitialised {
            nr_cpu_ids: 8
        }))
    ));
}
