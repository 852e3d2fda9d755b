//! CPU deactivation, the dying CPU's flush, and the domain rebuild (spec §5.3, §5.6).

use nohz::{HotplugError, KickOutcome, TopologyError};
use nohz::{NohzFlags, Policy};
use nohz_testing::for_each_policy;
use nohz_testing::{Event, World};

fn deactivate_leaves_the_mask_goes_inactive_then_waits_for_kickers<P: Policy>() {
    let w = World::<P>::with_llcs(4, 4);
    w.enter(2);
    w.p.take_events();
    w.m.sched_cpu_deactivate(w.cpu(2), &*w.p).unwrap();
    assert!(w.mask().is_empty());
    assert!(
        !w.m.cpu_active(w.cpu(2)),
        "the crate cleared the active bit"
    );
    assert_eq!(w.events(), [Event::SynchronizeRcu]);
    // The domains were rebuilt without it: no domain, no LLC, the LLC counts three.
    assert!(!w.m.rq(w.cpu(2)).has_sched_domain());
    assert_eq!(w.m.llc_nr_busy_cpus(w.cpu(2)), None);
    assert_eq!(w.busy_count(0), 3);
    // Once inactive it never registers again until reactivated.
    w.enter(2);
    assert!(w.mask().is_empty());
    assert_eq!(
        w.m.sched_cpu_deactivate(w.cpu(2), &*w.p),
        Err(HotplugError::NotActive { cpu: 2 })
    );
    // Back: active, in its LLC again (counted busy), and it registers when it idles.
    w.m.sched_cpu_activate(w.cpu(2), &*w.p).unwrap();
    assert_eq!(
        w.m.sched_cpu_activate(w.cpu(2), &*w.p),
        Err(HotplugError::AlreadyActive { cpu: 2 })
    );
    assert_eq!(w.busy_count(0), 4);
    w.enter(2);
    assert_eq!(w.mask(), [2]);
    assert_eq!(w.busy_count(0), 3);
    assert_eq!(w.warnings(), 0);
}

fn refusals_change_nothing<P: Policy>() {
    let w = World::<P>::new(2);
    w.enter(1);
    // CPU 1 keeps time for a NO_HZ_FULL CPU: tick_nohz_cpu_hotpluggable says no.
    w.nohz_full(0);
    w.m.set_tick_do_timer_cpu(Some(w.cpu(1)));
    w.p.take_events();
    assert_eq!(
        w.m.sched_cpu_deactivate(w.cpu(1), &*w.p),
        Err(HotplugError::NohzFullTimekeeper { cpu: 1 })
    );
    assert!(w.m.cpu_active(w.cpu(1)) && w.mask() == [1] && w.events().is_empty());
    // Without NO_HZ_FULL CPUs the timekeeper may go; the last active CPU may not.
    w.m.nohz_full().clear(w.cpu(0));
    w.m.sched_cpu_deactivate(w.cpu(1), &*w.p).unwrap();
    assert_eq!(
        w.m.sched_cpu_deactivate(w.cpu(0), &*w.p),
        Err(HotplugError::LastActiveCpu { cpu: 0 })
    );
    assert!(w.m.cpu_active(w.cpu(0)));
    // A CPU dies only after its deactivation.
    assert_eq!(
        w.m.cpu_dying(w.cpu(0), &*w.p),
        Err(HotplugError::StillActive { cpu: 0 })
    );
}

fn deactivation_refused_later_rolls_back<P: Policy>() {
    // The embedder's cpuset step refuses after sched_cpu_deactivate: sched_cpu_activate undoes it.
    let w = World::<P>::with_llcs(4, 4);
    w.enter(3);
    w.busy(3, 1);
    w.m.sched_cpu_deactivate(w.cpu(3), &*w.p).unwrap();
    w.m.sched_cpu_activate(w.cpu(3), &*w.p).unwrap();
    assert!(w.m.cpu_active(w.cpu(3)) && w.m.rq(w.cpu(3)).has_sched_domain());
    assert_eq!(w.busy_count(0), 4, "counted busy in the rebuilt LLC");
    w.enter(3);
    assert_eq!(w.mask(), [3]);
    assert_eq!(w.warnings(), 0);
}

fn dying_cpu_runs_its_queued_kick_so_nothing_is_stuck<P: Policy>() {
    let w = World::<P>::new(4);
    w.enter(3);
    assert_eq!(
        w.m.kick_ilb(w.cpu(0), NohzFlags::STATS, &*w.p),
        KickOutcome::Sent(w.cpu(3))
    );
    // CPU 3 goes down before the IPI is handled.
    w.m.sched_cpu_deactivate(w.cpu(3), &*w.p).unwrap();
    w.m.cpu_dying(w.cpu(3), &*w.p).unwrap();
    let rq = w.m.rq(w.cpu(3));
    assert!(!rq.csd_busy());
    assert_eq!(rq.nohz_flags().load(), NohzFlags::empty());
    // Back online and idle again: the first kick owns the csd and sends.
    w.m.tick_nohz_activate(w.cpu(3), true);
    w.m.sched_cpu_activate(w.cpu(3), &*w.p).unwrap();
    w.enter(3);
    assert_eq!(
        w.m.kick_ilb(w.cpu(0), NohzFlags::STATS, &*w.p),
        KickOutcome::Sent(w.cpu(3))
    );
    assert_eq!(w.warnings(), 0);
    // With nothing queued, the flush does nothing but the tick's teardown.
    w.m.nohz_csd_ipi(w.cpu(3), &*w.p);
    w.m.sched_cpu_deactivate(w.cpu(3), &*w.p).unwrap();
    w.p.take_events();
    w.m.cpu_dying(w.cpu(3), &*w.p).unwrap();
    assert_eq!(w.events(), [Event::CancelTick { cpu: w.cpu(3) }]);
}

fn rebuild_resets_busy_counts_and_idle_cpus_are_not_counted_twice<P: Policy>() {
    let w = World::<P>::with_llcs(4, 2);
    w.enter(1);
    w.enter(3);
    assert_eq!((w.busy_count(0), w.busy_count(2)), (1, 1));
    w.rebuild();
    assert_eq!(
        (w.busy_count(0), w.busy_count(2)),
        (2, 2),
        "reset to the LLC weight"
    );
    assert_eq!(w.mask(), [1, 3], "the mask is not touched");
    assert!(!w.m.nohz_idle(w.cpu(1)));
    // CPU 1 leaves: already counted busy, so no increment.
    w.busy(1, 1);
    w.tick(1);
    assert_eq!(w.busy_count(0), 2);
    // CPU 3 re-enters idle while registered: idempotent path, not counted idle again.
    w.m.nohz_balance_enter_idle(w.cpu(3), &*w.p);
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
    w.rebuild();
    let llc = |i| w.m.llc_nr_busy_cpus(w.cpu(i));
    let leader = |i| w.m.llc_leader(w.cpu(i));
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
        !w.m.nohz_idle(w.cpu(2)),
        "never counted idle: it has no LLC"
    );
    assert_eq!(llc(3), Some(1));
    // Once CPU 3 is isolated too, CPU 5 is alone: its domain degenerates on the next rebuild.
    w.p.set_sched_domain(w.cpu(3), false);
    w.rebuild();
    assert_eq!((leader(3), leader(5), llc(5)), (None, None, None));
    // Both back: LLC 3 spans 3, 4 and 5 again, all busy in the fresh domain.
    w.p.set_sched_domain(w.cpu(3), true);
    w.p.set_sched_domain(w.cpu(4), true);
    w.rebuild();
    assert_eq!((leader(4), llc(4)), (Some(3), Some(3)));
    assert_eq!(w.warnings(), 0);
}

fn inconsistent_topology_is_refused_and_changes_nothing<P: Policy>() {
    let w = World::<P>::with_llcs(4, 2);
    w.p.set_llc(w.cpu(1), Some(w.cpu(3)));
    assert_eq!(
        w.m.rebuild_sched_domains(&*w.p),
        Err(TopologyError::BadLlcLeader { cpu: 1, leader: 3 })
    );
    w.p.set_llc(w.cpu(1), Some(w.cpu(0)));
    w.p.set_llc(w.cpu(0), Some(w.cpu(1)));
    assert!(w.m.rebuild_sched_domains(&*w.p).is_err());
    assert_eq!(w.m.llc_leader(w.cpu(1)), Some(0), "old topology kept");
    assert_eq!(w.busy_count(1), 2);
}

for_each_policy!(
    deactivate_leaves_the_mask_goes_inactive_then_waits_for_kickers,
    refusals_change_nothing,
    deactivation_refused_later_rolls_back,
    dying_cpu_runs_its_queued_kick_so_nothing_is_stuck,
    rebuild_resets_busy_counts_and_idle_cpus_are_not_counted_twice,
    a_lone_cpu_has_no_llc_domain_and_a_domainless_cpu_is_not_in_one,
    inconsistent_topology_is_refused_and_changes_nothing,
);

#[test]
fn init_refuses_bad_input_and_a_second_call() {
    use nohz::InitError;
    use nohz::{CpuError, Jiffies, NrCpuIds, Patched};
    let w = World::<Patched>::unbooted(8, Jiffies::new(0));
    let (m, p) = (&*w.m, &*w.p);
    assert!(matches!(
        m.init(9, 0, p),
        Err(InitError::Cpus(CpuError::TooManyCpus { .. }))
    ));
    assert!(m.init(0, 0, p).is_err());
    assert!(
        matches!(
            m.init(8, 8, p),
            Err(InitError::Cpus(CpuError::OutOfRange {
                index: 8,
                nr_cpu_ids: 8
            }))
        ),
        "a boot CPU the machine does not have"
    );
    let nr = NrCpuIds::<8>::full();
    p.set_llc(nr.cpu(2).unwrap(), Some(nr.cpu(5).unwrap()));
    assert!(matches!(m.init(8, 0, p), Err(InitError::Topology(_))));
    assert_eq!(m.nr_cpu_ids().get(), 0, "refused inits change nothing");
    p.set_llc(nr.cpu(2).unwrap(), Some(nr.cpu(0).unwrap()));
    assert_eq!(m.init(8, 5, p).unwrap().get(), 8);
    assert_eq!(
        m.tick_do_timer_cpu().map(|c| c.index()),
        Some(5),
        "the boot CPU the caller named keeps time"
    );
    assert!(matches!(
        m.init(8, 0, p),
        Err(InitError::Cpus(CpuError::AlreadyInitialised {
            nr_cpu_ids: 8
        }))
    ));
}

/// `sched_cpu_deactivate` on CPU 2 while, during its `synchronize_rcu`, the dying CPU runs its
/// idle loop and stops its tick (the hotplug thread sleeps; the CPU has nothing else to run).
/// Afterwards CPU 2 must be out of the idle mask for good and never be kicked.
fn the_dying_cpu_idles_during_the_grace_period<P: Policy>() {
    let (m, p, nr) = World::<P, 4>::shared();
    let [c0, c2] = [0, 2].map(|i| nr.cpu(i).unwrap());
    // CPU 2 idled with its tick stopped; now its hotplug thread runs the deactivation.
    m.nohz_balance_enter_idle(c2, &*p);
    m.rq(c2).set_curr_is_idle(false);
    m.rq(c2).set_nr_running(1);
    let hm = m.clone();
    p.on_synchronize_rcu(move |p| {
        let m = &hm;
        // The hotplug thread sleeps: CPU 2 switches to its idle task and stops the tick.
        m.rq(c2).set_nr_running(0);
        m.rq(c2).set_curr_is_idle(true);
        m.nohz_balance_enter_idle(c2, p);
    });
    m.sched_cpu_deactivate(c2, &*p).unwrap();
    assert!(
        !m.nohz_idle_test(c2),
        "a deactivated CPU re-registered during the grace period"
    );
    // A busy CPU's kick finds nobody to send to.
    m.rq(c0).set_curr_is_idle(false);
    m.rq(c0).set_nr_running(2);
    assert_eq!(
        m.kick_ilb(c0, NohzFlags::STATS | NohzFlags::BALANCE, &*p),
        KickOutcome::NoIlb
    );
    assert!(p.ipis().is_empty(), "an IPI to a CPU being torn down");
}

mod dying_cpu_idles {
    nohz_testing::for_each_policy!(the_dying_cpu_idles_during_the_grace_period);
    use super::the_dying_cpu_idles_during_the_grace_period;
}

/// A whole offline -> online cycle of CPU 1, which idled with its tick stopped, had a kick in
/// flight, and went down from its idle state: afterwards it is as a CPU that just came up.
fn an_offline_online_cycle_leaves_a_freshly_booted_cpu<P: Policy>() {
    use nohz::TsFlags;
    let w = World::<P>::with_llcs(4, 4);
    let c1 = w.cpu(1);
    // CPU 1 idles through tick-sched: tick stopped, registered, idle time accumulating.
    w.idle(1);
    w.m.tick_nohz_idle_enter(c1, &*w.p);
    w.m.tick_nohz_idle_stop_tick(c1, &*w.p);
    assert!(w.ts(1).tick_stopped() && w.mask() == [1]);
    assert_eq!(
        w.m.kick_ilb(w.cpu(0), NohzFlags::STATS, &*w.p),
        KickOutcome::Sent(c1)
    );
    // Its hotplug thread runs (the idle loop is left; the kick is not handled yet).
    w.p.advance_time_ns(3_000_000);
    w.m.tick_nohz_idle_exit(c1, &*w.p);
    w.busy(1, 1);
    w.m.sched_cpu_deactivate(c1, &*w.p).unwrap();
    // The thread sleeps, the CPU idles again: the tick stops, but it does not register.
    w.idle(1);
    w.m.tick_nohz_idle_enter(c1, &*w.p);
    w.m.tick_nohz_idle_stop_tick(c1, &*w.p);
    let ts = w.ts(1);
    assert!(
        ts.flags()
            .contains(TsFlags::INIDLE | TsFlags::STOPPED | TsFlags::IDLE_ACTIVE)
    );
    assert!(w.mask().is_empty());
    let stats = (
        ts.idle_calls(),
        ts.idle_sleeps(),
        ts.idle_sleeptime(),
        ts.iowait_sleeptime(),
    );
    assert!(stats.0 >= 2 && stats.2 > 0);
    // It dies from there: the stopper task takes over for stop-machine, so the CPU is no
    // longer idle_cpu() when the dying flush runs the kick's handler, which drops the request
    // and raises no softirq.
    w.p.take_events();
    w.m.rq(c1).set_curr_is_idle(false);
    w.m.cpu_dying(c1, &*w.p).unwrap();
    assert!(!w.m.sched_softirq_pending(c1));
    assert!(w.events().contains(&Event::CancelTick { cpu: c1 }));
    let rq = w.m.rq(c1);
    assert!(!rq.csd_busy() && rq.nohz_flags().load().is_empty());
    assert_eq!(
        ts.flags(),
        TsFlags::empty(),
        "tick_sched_timer_dying's reset"
    );
    assert_eq!(
        (ts.timer_expires_base(), ts.next_tick(), ts.tick_dep_mask()),
        (0, 0, 0)
    );
    assert_eq!(
        stats,
        (
            ts.idle_calls(),
            ts.idle_sleeps(),
            ts.idle_sleeptime(),
            ts.iowait_sleeptime()
        ),
        "the idle statistics outlive the CPU"
    );
    assert!(!w.m.cpu_online(c1), "__cpu_disable took it offline");
    // Up again: online with its tick set up, then activated.
    w.m.cpu_starting(c1, &*w.p);
    assert!(w.m.cpu_online(c1));
    w.m.sched_cpu_activate(c1, &*w.p).unwrap();
    w.busy(1, 1);
    let fresh = w.ts(3);
    assert_eq!(ts.flags(), fresh.flags(), "as CPU 3, which never idled");
    assert!(!w.m.nohz_idle_test(c1));
    assert!(!rq.nohz_tick_stopped() && !w.m.nohz_idle(c1) && rq.has_sched_domain());
    assert_eq!(
        w.busy_count(1),
        4,
        "counted busy, as every CPU of a fresh domain"
    );
    // And it works as one: it idles, registers, is kicked, and leaves on its first busy tick.
    w.idle(1);
    w.m.tick_nohz_idle_enter(c1, &*w.p);
    w.m.tick_nohz_idle_stop_tick(c1, &*w.p);
    assert_eq!(w.mask(), [1]);
    assert_eq!(w.busy_count(1), 3);
    assert_eq!(
        w.m.kick_ilb(w.cpu(0), NohzFlags::STATS, &*w.p),
        KickOutcome::Sent(c1)
    );
    w.m.nohz_csd_ipi(c1, &*w.p);
    w.m.tick_nohz_idle_exit(c1, &*w.p);
    w.busy(1, 1);
    w.tick(1);
    assert!(w.mask().is_empty());
    assert_eq!(w.warnings(), 0);
}

/// The timekeeper dies: the duty passes to the lowest other active CPU, whose tick then moves
/// jiffies on.
fn time_goes_on_when_the_timekeeper_dies<P: Policy>() {
    let w = World::<P>::new(4);
    w.m.set_tick_do_timer_cpu(Some(w.cpu(0)));
    w.busy(0, 1);
    w.m.sched_cpu_deactivate(w.cpu(0), &*w.p).unwrap();
    w.m.cpu_dying(w.cpu(0), &*w.p).unwrap();
    assert_eq!(w.m.tick_do_timer_cpu(), Some(w.cpu(1)));
    let before = w.now();
    w.p.set_time_ns(w.p.time_ns() + 5_000_000);
    w.busy(1, 1);
    w.m.tick_sched_timer(w.cpu(1), &*w.p);
    assert_eq!(w.now().since(before), 5, "CPU 1's tick caught jiffies up");
}

/// CPU 1's hotplug thread deactivates it, and CPU 1's first busy tick after idle, which
/// interrupts the thread and runs whole, comes before or after the thread's exit from the
/// idle mask. Either way one of the two takes CPU 1 out: the mask loses it and, under
/// `Legacy`, `nohz.nr_cpus` goes down once (CPU 2 stays registered and counted). The
/// thread's exit is one swap, so a tick cannot land inside it (a load and a store, as the C
/// has, let a tick between them take the CPU out a second time: the unikernel's Legacy
/// boot saw `nr_cpus` 0 with a CPU in the mask).
fn the_deactivation_and_its_own_tick_take_the_cpu_out_once<P: Policy>() {
    for tick_first in [true, false] {
        let w = World::<P>::with_llcs(4, 4);
        let (c1, c2) = (w.cpu(1), w.cpu(2));
        for (i, c) in [(1, c1), (2, c2)] {
            w.idle(i);
            w.m.nohz_balance_enter_idle(c, &*w.p);
        }
        // CPU 1's hotplug thread runs.
        w.busy(1, 1);
        if tick_first {
            w.m.nohz_balancer_kick(c1, &*w.p);
        }
        w.m.sched_cpu_deactivate(c1, &*w.p).unwrap();
        if !tick_first {
            w.m.nohz_balancer_kick(c1, &*w.p);
        }
        assert_eq!(w.mask(), [2], "tick first: {tick_first}");
        if P::NR_CPUS_COUNTER {
            assert_eq!(w.m.nohz().nr_cpus(), 1, "tick first: {tick_first}");
        }
    }
}

mod cycle {
    nohz_testing::for_each_policy!(
        an_offline_online_cycle_leaves_a_freshly_booted_cpu,
        time_goes_on_when_the_timekeeper_dies,
        the_deactivation_and_its_own_tick_take_the_cpu_out_once
    );
    use super::{
        an_offline_online_cycle_leaves_a_freshly_booted_cpu,
        the_deactivation_and_its_own_tick_take_the_cpu_out_once,
        time_goes_on_when_the_timekeeper_dies,
    };
}

/// The LLC's first CPU goes down: the LLC domain of the others is led by the next CPU
/// (`sd_llc_id` is the first CPU of the domain's span) and still counts them.
fn the_llc_leader_goes_down_and_the_next_cpu_leads<P: Policy>() {
    let w = World::<P>::with_llcs(4, 4);
    w.m.set_tick_do_timer_cpu(Some(w.cpu(3)));
    w.busy(0, 1);
    w.m.sched_cpu_deactivate(w.cpu(0), &*w.p).unwrap();
    for c in 1..4 {
        assert_eq!(w.m.llc_leader(w.cpu(c)), Some(1), "CPU {c}");
    }
    assert_eq!(w.m.llc_leader(w.cpu(0)), None);
    assert_eq!(w.busy_count(1), 3);
    w.enter(2);
    assert_eq!(w.busy_count(3), 2);
    w.m.sched_cpu_activate(w.cpu(0), &*w.p).unwrap();
    assert_eq!(w.m.llc_leader(w.cpu(2)), Some(0));
    assert_eq!(w.busy_count(0), 4, "a fresh domain counts every CPU busy");
    assert_eq!(w.warnings(), 0);
}

mod llc_leader {
    nohz_testing::for_each_policy!(the_llc_leader_goes_down_and_the_next_cpu_leads);
    use super::the_llc_leader_goes_down_and_the_next_cpu_leads;
}
