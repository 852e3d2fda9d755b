//! `sched_balance_newidle`'s NOHZ-visible effects and `nohz_newidle_balance`.

use nohz::SCHED_MIGRATION_COST_NS;
use nohz::platform::{NewidleDomain, NewidleOutcome};
use nohz::{Jiffies, NohzFlags, Policy};
use nohz_testing::for_each_policy;
use nohz_testing::{Event, START_JIFFIES, START_NS, World};

/// CPU 3 about to go idle with a long expected idle; blocked load pending and due.
fn setup<P: Policy>() -> World<P> {
    let w = World::<P>::new(4);
    w.enter(1);
    w.advance(1);
    let rq = w.m.rq(w.cpu(3));
    rq.set_avg_idle(SCHED_MIGRATION_COST_NS);
    rq.set_misfit_task_load(7);
    w.p.take_events();
    w
}

fn newilb<P: Policy>(w: &World<P>) -> bool {
    w.m.rq(w.cpu(3))
        .nohz_flags()
        .load()
        .contains(NohzFlags::NEWILB)
}

fn nothing_pulled_requests_a_local_refresh<P: Policy>() {
    let w = setup::<P>();
    assert!(!w.m.sched_balance_newidle(w.cpu(3), &*w.p));
    assert!(newilb(&w));
    let c = w.cpu(3);
    assert_eq!(
        w.events(),
        [
            Event::BlockedAverages { by: c, cpu: c },
            Event::NewidleBalance {
                cpu: c,
                t0: START_NS
            }
        ]
    );
    assert!(w.ipis().is_empty(), "no IPI for NEWILB");
}

fn pulled_task_requests_nothing<P: Policy>() {
    let w = setup::<P>();
    w.p.set_newidle_outcome(NewidleOutcome {
        pulled_task: true,
        next_balance: None,
    });
    assert!(w.m.sched_balance_newidle(w.cpu(3), &*w.p));
    assert!(!newilb(&w));
}

fn short_idle_or_nothing_blocked_or_not_due_requests_nothing<P: Policy>() {
    let w = setup::<P>();
    w.m.rq(w.cpu(3)).set_avg_idle(SCHED_MIGRATION_COST_NS - 1);
    w.m.sched_balance_newidle(w.cpu(3), &*w.p);
    assert!(!newilb(&w), "expected idle too short");

    let w = setup::<P>();
    // A STATS pass clears the flag (nothing left) and moves next_blocked 32 ticks on.
    w.m.nohz_idle_balance_pass(w.cpu(1), NohzFlags::STATS, &*w.p);
    assert!(!w.m.nohz().has_blocked_load());
    w.m.sched_balance_newidle(w.cpu(3), &*w.p);
    assert!(!newilb(&w), "no blocked load anywhere");

    let w = setup::<P>();
    w.p.set_blocked_load_remains(w.cpu(1), true);
    w.m.nohz_idle_balance_pass(w.cpu(1), NohzFlags::STATS, &*w.p);
    assert!(w.m.nohz().has_blocked_load());
    w.m.sched_balance_newidle(w.cpu(3), &*w.p);
    assert!(!newilb(&w), "refresh not due before next_blocked");
    w.advance(31);
    w.m.sched_balance_newidle(w.cpu(3), &*w.p);
    assert!(!newilb(&w), "one tick before next_blocked");
    w.advance(1);
    w.m.sched_balance_newidle(w.cpu(3), &*w.p);
    assert!(newilb(&w), "at next_blocked the refresh is due");
}

fn wakeup_pending_or_inactive_returns_early<P: Policy>() {
    let w = setup::<P>();
    w.m.rq(w.cpu(3)).set_ttwu_pending(true);
    assert!(!w.m.sched_balance_newidle(w.cpu(3), &*w.p));
    assert!(!newilb(&w) && w.events().is_empty());

    let w = setup::<P>();
    w.deactivate(3);
    w.m.sched_balance_newidle(w.cpu(3), &*w.p);
    assert!(!newilb(&w) && w.events().is_empty());
}

/// `update_misfit_status(NULL, rq)` returns at once unless asymmetric CPU capacity is active:
/// on a symmetric machine newidle leaves `misfit_task_load` as it was, on every path.
fn symmetric_capacity_leaves_misfit_alone<P: Policy>() {
    let w = setup::<P>();
    assert!(!w.m.sched_asym_cpucap_active());
    let rq = w.m.rq(w.cpu(3));
    assert!(!w.m.sched_balance_newidle(w.cpu(3), &*w.p));
    assert_eq!(rq.misfit_task_load(), 7, "after the domain walk");
    rq.set_ttwu_pending(true);
    w.m.sched_balance_newidle(w.cpu(3), &*w.p);
    assert_eq!(rq.misfit_task_load(), 7, "on the early return");
}

/// With asymmetric capacity (any CPU in an `SD_ASYM_CPUCAPACITY` domain) newidle clears the
/// misfit status first, before any early return. The machine learns it from the topology.
fn asymmetric_capacity_clears_misfit_before_any_early_return<P: Policy>() {
    let w = setup::<P>();
    w.p.set_asym_cpucapacity(true);
    assert!(
        !w.m.sched_asym_cpucap_active(),
        "read when the domains are built"
    );
    w.m.rebuild_sched_domains(&*w.p).unwrap();
    assert!(w.m.sched_asym_cpucap_active());
    let rq = w.m.rq(w.cpu(3));
    assert!(!w.m.sched_balance_newidle(w.cpu(3), &*w.p));
    assert_eq!(rq.misfit_task_load(), 0, "after the domain walk");
    rq.set_misfit_task_load(7);
    rq.set_ttwu_pending(true);
    w.m.sched_balance_newidle(w.cpu(3), &*w.p);
    assert_eq!(rq.misfit_task_load(), 0, "before the wakeup's early return");
    rq.set_ttwu_pending(false);
    rq.set_misfit_task_load(7);
    w.deactivate(3);
    w.m.sched_balance_newidle(w.cpu(3), &*w.p);
    assert_eq!(
        rq.misfit_task_load(),
        0,
        "before the inactive CPU's early return"
    );
    // Symmetric again from the next rebuild on.
    w.m.sched_cpu_activate(w.cpu(3), &*w.p).unwrap();
    w.p.set_asym_cpucapacity(false);
    w.m.rebuild_sched_domains(&*w.p).unwrap();
    assert!(!w.m.sched_asym_cpucap_active());
    rq.set_misfit_task_load(7);
    w.m.sched_balance_newidle(w.cpu(3), &*w.p);
    assert_eq!(rq.misfit_task_load(), 7);
    assert_eq!(w.warnings(), 0);
}

/// The system-wide key comes from the per-CPU answers at init too, and only CPUs with a base
/// domain can have an asymmetric-capacity one.
fn the_asym_key_is_derived_at_init_from_cpus_with_a_domain<P: Policy>() {
    let w = World::<P>::unbooted(4, Jiffies::new(START_JIFFIES));
    let (m, p, nr) = (&*w.m, &*w.p, w.p.nr_cpu_ids());
    p.set_asym_cpucapacity(true);
    assert!(!m.sched_asym_cpucap_active(), "a false key until init");
    m.init(4, 0, p).unwrap();
    assert!(m.sched_asym_cpucap_active(), "set by init's domain build");
    for cpu in nr.iter() {
        p.set_sched_domain(cpu, false);
    }
    m.rebuild_sched_domains(p).unwrap();
    assert!(!m.sched_asym_cpucap_active(), "no CPU has a domain");
    p.set_sched_domain(nr.cpu(2).unwrap(), true);
    m.rebuild_sched_domains(p).unwrap();
    assert!(m.sched_asym_cpucap_active(), "one CPU is enough");
    assert_eq!(m.warnings().total(nr), 0);
}

fn isolated_cpu_skips_the_walk_but_still_requests<P: Policy>() {
    let w = setup::<P>();
    w.p.set_sched_domain(w.cpu(3), false);
    w.rebuild();
    w.m.sched_balance_newidle(w.cpu(3), &*w.p);
    assert!(w.events().is_empty(), "no domain walk");
    assert!(newilb(&w));
}

fn next_balance_is_pulled_in<P: Policy>() {
    let w = setup::<P>();
    let rq = w.m.rq(w.cpu(3));
    rq.set_next_balance(w.now().add(5000));
    w.m.sched_balance_newidle(w.cpu(3), &*w.p);
    assert_eq!(rq.next_balance(), w.now().add(1000), "jiffies + HZ");
    w.p.set_newidle_outcome(NewidleOutcome {
        pulled_task: false,
        next_balance: Some(w.now().add(12)),
    });
    w.m.sched_balance_newidle(w.cpu(3), &*w.p);
    assert_eq!(
        rq.next_balance(),
        w.now().add(12),
        "an earlier domain deadline"
    );
    w.p.set_newidle_outcome(NewidleOutcome {
        pulled_task: false,
        next_balance: Some(w.now().add(50)),
    });
    w.m.sched_balance_newidle(w.cpu(3), &*w.p);
    assert_eq!(rq.next_balance(), w.now().add(12), "never pushed out");
}

/// Before its domain walk, newidle refreshes this CPU's own blocked averages
/// (`__sched_balance_update_blocked_averages(this_rq)`): the same stamp, decay and
/// `update_blocked_load_status` that `update_nohz_stats` does for a remote CPU.
fn the_walk_refreshes_this_cpus_blocked_load_first<P: Policy>() {
    let w = setup::<P>();
    let (c, rq) = (w.cpu(3), w.m.rq(w.cpu(3)));
    // CPU 3 idled before (registered, blocked load set), then ran a task that blocked.
    w.enter(3);
    w.busy(3, 1);
    w.advance(1);
    w.p.set_blocked_load_remains(c, true);
    w.p.take_events();
    assert!(!w.m.sched_balance_newidle(c, &*w.p));
    assert_eq!(
        w.events(),
        [
            Event::BlockedAverages { by: c, cpu: c },
            Event::NewidleBalance {
                cpu: c,
                t0: START_NS
            }
        ],
        "the refresh, then the walk"
    );
    assert_eq!(rq.last_blocked_load_update_tick(), w.now(), "stamped");
    assert!(rq.has_blocked_load(), "load remains: the flag stays");

    // A jiffy later the load is gone: the refresh clears the flag.
    w.advance(1);
    w.p.set_blocked_load_remains(c, false);
    w.p.take_events();
    w.m.sched_balance_newidle(c, &*w.p);
    assert_eq!(w.decayed(), [3]);
    assert_eq!(rq.last_blocked_load_update_tick(), w.now());
    assert!(
        !rq.has_blocked_load(),
        "update_blocked_load_status cleared it"
    );
    assert_eq!(w.warnings(), 0);
}

/// An ILB pass in the same jiffy as a newidle walk skips that CPU's decay
/// (`update_nohz_stats` finds the stamp current), as in the kernel.
fn an_ilb_pass_in_the_jiffy_of_a_walk_does_not_decay_again<P: Policy>() {
    let w = setup::<P>();
    let c = w.cpu(3);
    w.enter(3);
    w.busy(3, 1);
    w.advance(1);
    w.p.set_blocked_load_remains(c, true);
    w.m.sched_balance_newidle(c, &*w.p);
    w.idle(3);
    w.p.take_events();
    w.m.nohz_idle_balance_pass(w.cpu(1), NohzFlags::STATS, &*w.p);
    assert_eq!(
        w.decayed(),
        [1],
        "CPU 3 was refreshed this jiffy: only CPU 1 decays"
    );
    assert!(
        w.m.nohz().has_blocked_load(),
        "its load remains: retried later"
    );
}

/// No walk, no refresh: the root domain is not overloaded, or the CPU does not expect to be
/// idle for as long as a walk has cost. `rq.next_balance` is pulled in to the base domain's
/// deadline instead, and with nothing pulled the NEWILB request still follows.
fn without_a_walk_nothing_is_refreshed_or_pulled<P: Policy>() {
    for (overloaded, cost) in [(false, 0), (true, SCHED_MIGRATION_COST_NS + 1)] {
        let w = setup::<P>();
        let (c, rq) = (w.cpu(3), w.m.rq(w.cpu(3)));
        w.enter(3);
        w.busy(3, 1);
        w.advance(1);
        let stamp = rq.last_blocked_load_update_tick();
        rq.set_next_balance(w.now().add(5000));
        w.p.set_newidle_domain(NewidleDomain {
            rd_overloaded: overloaded,
            max_newidle_lb_cost: cost,
            next_balance: Some(w.now().add(9)),
        });
        // A walk would pull: none runs, so nothing is pulled.
        w.p.set_newidle_outcome(NewidleOutcome {
            pulled_task: true,
            next_balance: None,
        });
        w.p.take_events();
        assert!(!w.m.sched_balance_newidle(c, &*w.p), "{overloaded} {cost}");
        assert!(w.events().is_empty(), "no refresh, no walk");
        assert_eq!(rq.last_blocked_load_update_tick(), stamp, "not stamped");
        assert!(rq.has_blocked_load());
        assert_eq!(rq.next_balance(), w.now().add(9), "the domain's deadline");
        assert!(newilb(&w));
    }
    // avg_idle exactly the walk's cost is long enough.
    let w = setup::<P>();
    let c = w.cpu(3);
    w.p.set_newidle_domain(NewidleDomain {
        rd_overloaded: true,
        max_newidle_lb_cost: SCHED_MIGRATION_COST_NS,
        next_balance: None,
    });
    w.m.sched_balance_newidle(c, &*w.p);
    assert_eq!(
        w.events().last(),
        Some(&Event::NewidleBalance {
            cpu: c,
            t0: START_NS
        })
    );
}

/// The walk's cost window opens before the blocked-load refresh, as the kernel takes
/// `t0 = sched_clock_cpu()` before `sched_balance_update_blocked_averages()`: the platform's
/// walk gets that `t0`, so the refresh counts toward the first domain's cost and its
/// `max_newidle_lb_cost`. Here the refresh takes 40 us of the CPU's clock.
fn the_cost_window_opens_before_the_refresh<P: Policy>() {
    let w = setup::<P>();
    let c = w.cpu(3);
    let p = w.p.clone();
    w.p.on_update_blocked_averages(move |_, _| {
        p.set_time_ns(p.time_ns() + 40_000);
        false
    });
    w.p.take_events();
    assert!(!w.m.sched_balance_newidle(c, &*w.p));
    assert_eq!(
        w.events(),
        [
            Event::BlockedAverages { by: c, cpu: c },
            Event::NewidleBalance {
                cpu: c,
                t0: START_NS
            }
        ],
        "t0 is the clock before the refresh, not after it"
    );
    assert_eq!(
        w.p.time_ns(),
        START_NS + 40_000,
        "the refresh took its time"
    );
}

for_each_policy!(
    the_cost_window_opens_before_the_refresh,
    without_a_walk_nothing_is_refreshed_or_pulled,
    the_walk_refreshes_this_cpus_blocked_load_first,
    an_ilb_pass_in_the_jiffy_of_a_walk_does_not_decay_again,
    nothing_pulled_requests_a_local_refresh,
    pulled_task_requests_nothing,
    short_idle_or_nothing_blocked_or_not_due_requests_nothing,
    wakeup_pending_or_inactive_returns_early,
    symmetric_capacity_leaves_misfit_alone,
    asymmetric_capacity_clears_misfit_before_any_early_return,
    the_asym_key_is_derived_at_init_from_cpus_with_a_domain,
    isolated_cpu_skips_the_walk_but_still_requests,
    next_balance_is_pulled_in,
);
