//! `nohz_balancer_kick`: the whole decision tree of spec §5.2.

use nohz::{KickDecision, KickOutcome};
use nohz::{NohzFlags, Policy};
use nohz_testing::for_each_policy;
use nohz_testing::{CPUS, World};

const SB: NohzFlags = NohzFlags::STATS.union(NohzFlags::BALANCE);

fn kick<P: Policy>(w: &World<P>, cpu: usize) -> KickDecision<CPUS> {
    w.m.nohz_balancer_kick(w.cpu(cpu), &*w.p)
}

/// Registered idle CPUs 2 and 3, busy CPUs 0 (`n` tasks) and 1; a STATS|NEXT pass done, so
/// neither STATS (not due for 32 ticks) nor NEXT asks for a kick, and balancing is due now.
fn setup<P: Policy>(n: u32) -> World<P> {
    let w = World::<P>::new(4);
    w.enter(2);
    w.enter(3);
    w.m.nohz_idle_balance_pass(w.cpu(3), NohzFlags::STATS | NohzFlags::NEXT, &*w.p);
    assert!(!w.m.nohz().needs_update());
    assert_eq!(w.m.nohz().next_balance(), w.now());
    w.busy(0, n);
    w.busy(1, 1);
    w.p.take_events();
    w
}

fn tick_on_idle_cpu_returns_at_once<P: Policy>() {
    let w = setup::<P>(1);
    w.m.rq(w.cpu(2)).set_curr_is_idle(true);
    w.tick(2);
    assert_eq!(kick(&w, 2), KickDecision::IdleTick);
    assert_eq!(w.mask(), [2, 3], "no exit on an idle tick");
}

fn first_busy_tick_exits_idle<P: Policy>() {
    let w = setup::<P>(1);
    w.busy(2, 1);
    w.tick(2);
    assert_eq!(w.mask(), [3]);
    assert!(!w.m.rq(w.cpu(2)).nohz_tick_stopped());
}

fn two_tasks_ask_for_balance<P: Policy>() {
    let w = setup::<P>(2);
    let d = w.tick(0).unwrap();
    assert_eq!(
        d,
        KickDecision::Kick {
            flags: SB,
            outcome: KickOutcome::Sent(w.cpu(2))
        }
    );
    assert_eq!(w.ipis(), [(0, 2)]);
}

fn not_due_goes_to_out_without_balance<P: Policy>() {
    let w = setup::<P>(2);
    // Move nohz.next_balance 10 ticks ahead, as a NEXT pass does from the idle rqs' deadlines.
    w.m.rq(w.cpu(3)).set_next_balance(w.now().add(10));
    w.m.rq(w.cpu(2)).set_next_balance(w.now().add(10));
    w.m.nohz_idle_balance_pass(w.cpu(3), NohzFlags::NEXT, &*w.p);
    assert_eq!(w.m.nohz().next_balance(), w.now().add(10));
    assert_eq!(kick(&w, 0), KickDecision::NoFlags, "two tasks, but not due");
    // With blocked load past its deadline, STATS still goes out while not due.
    w.advance(40);
    w.m.rq(w.cpu(2)).set_next_balance(w.now().add(10));
    w.m.rq(w.cpu(3)).set_next_balance(w.now().add(10));
    w.m.nohz_idle_balance_pass(w.cpu(3), NohzFlags::NEXT, &*w.p);
    w.advance(1);
    assert!(w.m.nohz().has_blocked_load());
    assert!(w.now().is_after(w.m.nohz().next_blocked()));
    assert!(matches!(
        kick(&w, 0),
        KickDecision::Kick {
            flags: NohzFlags::STATS,
            ..
        }
    ));
}

fn needs_update_adds_next<P: Policy>() {
    let w = setup::<P>(2);
    w.enter(1);
    assert!(w.m.nohz().needs_update());
    assert!(
        matches!(kick(&w, 0), KickDecision::Kick { flags, .. } if flags == SB | NohzFlags::NEXT)
    );
}

fn lost_capacity_asks_for_balance<P: Policy>() {
    let w = setup::<P>(1);
    // Split the LLCs so the busy count does not decide.
    w.p.set_llc_size(1);
    w.rebuild();
    assert_eq!(
        kick(&w, 0),
        KickDecision::NoFlags,
        "full capacity, one task"
    );
    // 1024 * 117 < 1024 * 100 is false; at 800: 800 * 117 = 93600 < 102400.
    w.m.rq(w.cpu(0)).set_cpu_capacity(800);
    assert!(matches!(kick(&w, 0), KickDecision::Kick { flags: SB, .. }));
    // BALANCE moved nohz.next_balance to the next jiffy: go there.
    w.advance(1);
    // Without a runnable CFS task the capacity test does not apply.
    w.m.rq(w.cpu(0)).set_h_nr_runnable(0);
    assert_eq!(kick(&w, 0), KickDecision::NoFlags);
    // Nor without a domain.
    w.m.rq(w.cpu(0)).set_h_nr_runnable(1);
    w.p.set_sched_domain(w.cpu(0), false);
    w.rebuild();
    assert_eq!(kick(&w, 0), KickDecision::NoFlags);
    w.p.set_sched_domain(w.cpu(0), true);
    w.rebuild();
    assert!(matches!(kick(&w, 0), KickDecision::Kick { flags: SB, .. }));
}

fn asym_packing_prefers_an_idle_cpu<P: Policy>() {
    let w = setup::<P>(1);
    w.p.set_llc_size(1);
    w.rebuild();
    w.p.set_asym_packing(w.cpu(0), Some(5));
    w.p.set_asym_packing(w.cpu(3), Some(4));
    assert_eq!(
        kick(&w, 0),
        KickDecision::NoFlags,
        "idle CPU 3 has lower priority"
    );
    w.p.set_asym_packing(w.cpu(2), Some(9));
    assert!(matches!(kick(&w, 0), KickDecision::Kick { flags: SB, .. }));
}

fn asym_capacity_kicks_only_for_misfit_and_skips_the_llc_test<P: Policy>() {
    let w = setup::<P>(1);
    assert_eq!(w.busy_count(0), 2, "CPUs 0 and 1 busy");
    assert!(matches!(kick(&w, 0), KickDecision::Kick { flags: SB, .. }));
    let w2 = setup::<P>(1);
    w2.p.set_asym_cpucapacity(true);
    assert_eq!(
        kick(&w2, 0),
        KickDecision::NoFlags,
        "LLC busy count not consulted"
    );
    w2.m.rq(w2.cpu(0)).set_misfit_task_load(10);
    assert!(matches!(kick(&w2, 0), KickDecision::Kick { flags: SB, .. }));
}

fn llc_busy_count_decides_last<P: Policy>() {
    let w = setup::<P>(1);
    assert_eq!(w.busy_count(0), 2);
    assert!(matches!(kick(&w, 0), KickDecision::Kick { flags: SB, .. }));
    let w = setup::<P>(1);
    w.enter(1);
    w.m.nohz_idle_balance_pass(w.cpu(3), NohzFlags::NEXT, &*w.p);
    assert_eq!(w.busy_count(0), 1, "only CPU 0 busy");
    assert_eq!(kick(&w, 0), KickDecision::NoFlags);
}

/// `check_cpu_capacity`: a CPU asks for a balance when its capacity times the imbalance is
/// *below* its full capacity times 100; exactly at the threshold (800 x 125 = 1000 x 100) it
/// does not.
fn capacity_exactly_at_the_threshold_asks_for_nothing<P: Policy>() {
    for (capacity, kicks) in [(799, true), (800, false)] {
        let w = World::<P>::new(4);
        // Read when the domains are built.
        w.p.set_capacity(1000, 125);
        w.rebuild();
        for i in 1..4 {
            w.enter(i);
        }
        w.busy(0, 1);
        w.m.rq(w.cpu(0)).set_cpu_capacity(capacity);
        assert_eq!(w.m.rq(w.cpu(0)).cpu_capacity(), capacity);
        w.advance(2);
        let balance = matches!(
            w.tick(0),
            Some(KickDecision::Kick { flags, .. }) if flags.contains(NohzFlags::BALANCE)
        );
        assert_eq!(balance, kicks, "capacity {capacity} of 1000 at 125%");
    }
}

/// `rq->cpu_capacity` reads back what the scheduler set, full capacity included.
fn cpu_capacity_reads_back_what_was_set<P: Policy>() {
    let w = World::<P>::new(4);
    let rq = w.m.rq(w.cpu(2));
    assert_eq!(rq.cpu_capacity(), 1024, "a fresh CPU at full capacity");
    for c in [600, 1024, 2048, 0, 1024] {
        rq.set_cpu_capacity(c);
        assert_eq!(rq.cpu_capacity(), c);
    }
}

/// `check_cpu_capacity` reads the base domain's `imbalance_pct` and the CPU's capacity as the
/// domain build left them (the kernel's `sd->imbalance_pct` is a field of the domain): the busy
/// tick, with interrupts off, asks the platform for neither, and a new answer reaches the kick
/// with the next domain build. Every CPU in an LLC of its own, so the LLC test never kicks.
fn the_capacity_check_asks_the_platform_nothing_on_the_tick<P: Policy>() {
    let w = World::<P>::with_llcs(4, 1);
    for i in 1..4 {
        w.enter(i);
    }
    w.busy(0, 1);
    // 800 x 117 < 1024 x 100: capacity lost beyond the imbalance.
    w.m.rq(w.cpu(0)).set_cpu_capacity(800);
    let balance = |w: &World<P>| {
        w.advance(2);
        matches!(
            w.tick(0),
            Some(KickDecision::Kick { flags, .. }) if flags.contains(NohzFlags::BALANCE)
        )
    };
    let reads = w.p.capacity_reads();
    assert!(balance(&w));
    assert_eq!(
        w.p.capacity_reads(),
        reads,
        "the tick asked the platform for imbalance_pct or arch_capacity"
    );
    // 800 x 130 >= 1024 x 100: no longer worth a balance, from the next domain build on.
    w.p.set_capacity(1024, 130);
    assert!(balance(&w), "the domain still has 117");
    w.rebuild();
    assert!(!balance(&w), "the rebuilt domain has 130");
    assert_eq!(w.warnings(), 0);
}

for_each_policy!(
    the_capacity_check_asks_the_platform_nothing_on_the_tick,
    tick_on_idle_cpu_returns_at_once,
    first_busy_tick_exits_idle,
    not_due_goes_to_out_without_balance,
    capacity_exactly_at_the_threshold_asks_for_nothing,
    cpu_capacity_reads_back_what_was_set,
);

/// The tests that expect a kick wanting balancing to ask STATS|BALANCE whatever
/// `nohz.next_blocked` says. Not `Paced`, which asks STATS only once it is due (its
/// documented divergence): `tests/paced.rs` pins each of these reasons with BALANCE alone.
mod stats_with_every_balance_kick {
    use super::{
        asym_capacity_kicks_only_for_misfit_and_skips_the_llc_test,
        asym_packing_prefers_an_idle_cpu, llc_busy_count_decides_last,
        lost_capacity_asks_for_balance, needs_update_adds_next, two_tasks_ask_for_balance,
    };

    nohz_testing::for_each_policy!(except Paced:
        two_tasks_ask_for_balance,
        needs_update_adds_next,
        lost_capacity_asks_for_balance,
        asym_packing_prefers_an_idle_cpu,
        asym_capacity_kicks_only_for_misfit_and_skips_the_llc_test,
        llc_busy_count_decides_last,
    );
}

/// `Scalable`'s precomputed deadline word: `nohz_balance_enter_idle` setting a flag makes it stale, the
/// first kick that finds it stale refreshes it (once), and a refreshed word answers the
/// not-due test exactly as the full test does.
mod scalable_deadline {
    use super::*;
    use nohz::Scalable;

    /// The word keeps a deadline's low 32 bits.
    fn low32(j: nohz::Jiffies) -> Option<nohz::Jiffies> {
        Some(nohz::Jiffies::new(j.get() as u32 as usize))
    }

    /// Balancing not due for 10 ticks, nothing flagged, a fresh word.
    fn not_due_for_10() -> World<Scalable> {
        let w = setup::<Scalable>(2);
        for cpu in [2, 3] {
            w.m.rq(w.cpu(cpu)).set_next_balance(w.now().add(10));
        }
        // One jiffy on, so the pass decays the blocked load it finds.
        w.advance(1);
        for cpu in [2, 3] {
            w.m.rq(w.cpu(cpu)).set_next_balance(w.now().add(10));
        }
        w.m.nohz_idle_balance_pass(w.cpu(3), NohzFlags::STATS | NohzFlags::NEXT, &*w.p);
        assert!(!w.m.nohz().needs_update() && !w.m.nohz().has_blocked_load());
        assert_eq!(w.m.nohz().kick_deadline(), low32(w.now().add(10)));
        w
    }

    /// Balancing due `ahead` ticks from now and nothing flagged, under `P`: the rqs' next
    /// balance set, one jiffy on, and a STATS|NEXT pass folds them into `nohz.next_balance`.
    fn not_due_for<P: Policy>(ahead: usize) -> World<P> {
        let w = setup::<P>(2);
        w.advance(1);
        for cpu in [2, 3] {
            w.m.rq(w.cpu(cpu)).set_next_balance(w.now().add(ahead));
        }
        w.m.nohz_idle_balance_pass(w.cpu(3), NohzFlags::STATS | NohzFlags::NEXT, &*w.p);
        assert_eq!(w.m.nohz().next_balance(), w.now().add(ahead));
        w
    }

    #[test]
    fn every_tick_up_to_and_past_the_deadline_decides_as_patched_does() {
        // The clock starts 20 ticks before the wrap of jiffies (and of their low 32 bits), so
        // a deadline 30 ticks on lies across it: the one-compare test then sends each tick to
        // the whole sequence, which must still say "not due" until the deadline.
        for ahead in [10, 30] {
            let s = not_due_for::<Scalable>(ahead);
            let p = not_due_for::<nohz::Patched>(ahead);
            assert_eq!(s.m.nohz().kick_deadline(), low32(s.now().add(ahead)));
            let mut first_kick = None;
            for t in 0..=ahead + 2 {
                let d = kick(&s, 0);
                assert_eq!(d, kick(&p, 0), "tick {t} of {ahead}");
                if d != KickDecision::NoFlags && first_kick.is_none() {
                    first_kick = Some(t);
                }
                s.advance(1);
                p.advance(1);
            }
            assert_eq!(
                first_kick,
                Some(ahead),
                "the first kick is the deadline's tick"
            );
            assert_eq!(s.ipis(), p.ipis());
        }
    }

    #[test]
    fn paced_keeps_scalables_deadline_tick_for_tick() {
        // Paced runs its busy tick on Scalable's line: the same word, kept fresh and staled
        // by the same writers, so each tick up to and past the deadline decides as Scalable's
        // does (Paced's kick flags differ only from the deadline on, where neither is NoFlags).
        for ahead in [10, 30] {
            let pa = not_due_for::<nohz::Paced>(ahead);
            let s = not_due_for::<Scalable>(ahead);
            assert_eq!(pa.m.nohz().kick_deadline(), low32(pa.now().add(ahead)));
            for t in 0..=ahead + 2 {
                let (dp, ds) = (kick(&pa, 0), kick(&s, 0));
                assert_eq!(
                    dp == KickDecision::NoFlags,
                    t < ahead,
                    "tick {t} of {ahead}"
                );
                assert_eq!(dp == KickDecision::NoFlags, ds == KickDecision::NoFlags);
                assert_eq!(pa.m.nohz().kick_deadline(), s.m.nohz().kick_deadline());
                pa.advance(1);
                s.advance(1);
            }
        }
        // A repeat entry raising nohz.has_blocked_load stales Paced's word too.
        let pa = not_due_for::<nohz::Paced>(10);
        pa.enter(2);
        assert_eq!(pa.m.nohz().kick_deadline(), None, "stale after the bump");
        assert_eq!(kick(&pa, 0), KickDecision::NoFlags);
        assert_eq!(pa.m.nohz().kick_deadline(), low32(pa.now().add(10)));
    }

    #[test]
    fn the_kernel_policies_keep_no_deadline() {
        assert_eq!(
            not_due_for::<nohz::Patched>(10).m.nohz().kick_deadline(),
            None
        );
        assert_eq!(
            not_due_for::<nohz::Legacy>(10).m.nohz().kick_deadline(),
            None
        );
    }

    #[test]
    fn a_pass_leaves_it_fresh_at_next_balance() {
        let w = not_due_for_10();
        assert_eq!(kick(&w, 0), KickDecision::NoFlags);
        assert_eq!(w.m.nohz().kick_deadline(), low32(w.now().add(10)));
    }

    #[test]
    fn a_repeat_entry_raising_blocked_load_stales_it_and_the_kick_refreshes_once() {
        let w = not_due_for_10();
        // CPU 2 re-enters idle: nohz.has_blocked_load goes 0 -> 1.
        w.enter(2);
        assert!(w.m.nohz().has_blocked_load());
        assert_eq!(w.m.nohz().kick_deadline(), None, "stale after the bump");
        // The kick refreshes it: STATS is possible from next_blocked + 1, after next_balance.
        assert_eq!(kick(&w, 0), KickDecision::NoFlags);
        assert_eq!(w.m.nohz().kick_deadline(), low32(w.now().add(10)));
        // A second re-entry reads the flag as 1 and leaves the word alone.
        w.enter(2);
        assert_eq!(w.m.nohz().kick_deadline(), low32(w.now().add(10)));
    }

    // The not-due test runs inline before the idle-tick test and the exit; these are the
    // ticks it must hand to the whole sequence even though balancing is not due.

    #[test]
    fn a_not_due_tick_still_takes_a_registered_cpu_out_of_the_mask() {
        let w = not_due_for_10();
        w.busy(3, 1);
        assert_eq!(kick(&w, 3), KickDecision::NoFlags);
        assert_eq!(w.mask(), [2], "CPU 3 left the mask on its first busy tick");
        assert!(!w.m.rq(w.cpu(3)).nohz_tick_stopped());
        assert_eq!(w.m.nohz().kick_deadline(), low32(w.now().add(10)));
    }

    #[test]
    fn a_not_due_tick_on_an_idle_cpu_is_an_idle_tick() {
        let w = not_due_for_10();
        // CPU 1 runs its idle task with the tick still on: not registered, but its tick
        // records idle_balance and must not go on to the kick.
        w.idle(1);
        assert_eq!(w.tick(1), Some(KickDecision::IdleTick));
        assert_eq!(w.mask(), [2, 3]);
    }

    #[test]
    fn a_not_due_tick_on_a_registered_idle_cpu_is_an_idle_tick() {
        let w = not_due_for_10();
        // CPU 2 is registered and idle: both of the gate's reasons to hand the tick on hold.
        assert!(w.m.rq(w.cpu(2)).nohz_tick_stopped());
        assert_eq!(w.tick(2), Some(KickDecision::IdleTick));
        assert_eq!(w.mask(), [2, 3]);
        assert_eq!(w.m.nohz().kick_deadline(), low32(w.now().add(10)));
    }

    #[test]
    fn a_registration_raising_only_needs_update_still_stales_it() {
        let w = not_due_for_10();
        // CPU 2's repeat entry raises nohz.has_blocked_load; the kick refreshes the word.
        w.enter(2);
        assert_eq!(kick(&w, 0), KickDecision::NoFlags);
        assert!(w.m.nohz().has_blocked_load());
        assert_eq!(w.m.nohz().kick_deadline(), low32(w.now().add(10)));
        // CPU 1 registers: it stores needs_update and reads has_blocked_load as 1 already, so
        // it stores one flag of the two; that one makes the kick due at once.
        w.enter(1);
        assert!(w.m.nohz().needs_update());
        assert_eq!(w.m.nohz().kick_deadline(), None, "stale after the bump");
        assert!(matches!(
            kick(&w, 0),
            KickDecision::Kick {
                flags: NohzFlags::NEXT,
                ..
            }
        ));
    }

    #[test]
    fn a_not_due_kick_run_from_another_cpu_still_counts_the_warning() {
        let w = not_due_for_10();
        w.p.set_this_cpu(Some(w.cpu(1)));
        assert_eq!(kick(&w, 0), KickDecision::NoFlags);
        assert_eq!(w.warnings(), 1, "WrongCpu, as on the whole path");
        w.p.set_this_cpu(Some(w.cpu(0)));
        assert_eq!(kick(&w, 0), KickDecision::NoFlags);
        assert_eq!(w.warnings(), 1);
    }

    #[test]
    fn a_registration_makes_the_kick_due_at_once() {
        let w = not_due_for_10();
        w.enter(1);
        assert!(w.m.nohz().needs_update());
        assert_eq!(w.m.nohz().kick_deadline(), None);
        // needs_update: the deadline the kick folds is now, which would decide no tick, so the
        // word is left stale (no write) and the full path runs and asks for NEXT.
        assert!(matches!(
            kick(&w, 0),
            KickDecision::Kick {
                flags: NohzFlags::NEXT,
                ..
            }
        ));
        assert_eq!(
            w.m.nohz().kick_deadline(),
            None,
            "stale: a due deadline is not written"
        );
    }
}
