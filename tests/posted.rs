//! The fixes posted to LKML in 2026 (`src/beyond/posted.rs`, feature `posted`), each against
//! `Patched` on the kernel path it changes: Khan's patch 1 in `_nohz_idle_balance`'s store of
//! `nohz.next_balance`, Khan's patch 2 in `find_new_ilb`, Hegde's in `nohz_balancer_kick`.
//! Each also runs every kernel-path test (`tests/kernel`, `for_each_policy!`) and the
//! state-machine test against the reference model taught its change (`tests/model`).

use nohz::{
    HegdeHk, KHAN_IDLE_CPUS_PER_JIFFY, Khan, KhanNextBalance, KhanRoundRobin, KickDecision,
    KickOutcome, NohzFlags, Patched, Policy,
};
use nohz_testing::World;

const SB: NohzFlags = NohzFlags::STATS.union(NohzFlags::BALANCE);

/// A 200-CPU machine with CPUs `1..=idle` registered idle, each due to balance 5 jiffies from
/// now, after a NEXT pass run by CPU 1: `nohz.next_balance` as the pass published it.
fn next_balance_after_a_pass<P: Policy>(idle: usize) -> (usize, usize) {
    let w = World::<P, 256, 4>::new(200);
    for i in 1..=idle {
        w.enter(i);
        w.m.rq(w.cpu(i)).set_next_balance(w.now().add(5));
    }
    w.m.nohz_idle_balance_pass(w.cpu(1), NohzFlags::NEXT, &*w.p);
    let next = w.m.nohz().next_balance();
    (next.get().wrapping_sub(w.now().get()), w.mask().len())
}

/// Khan 1: the pass publishes its earliest `rq->next_balance` plus one jiffy per
/// `KHAN_IDLE_CPUS_PER_JIFFY` registered CPUs (rounded down), where `Patched` publishes the
/// earliest itself; below one word of idle CPUs nothing changes.
fn khan_next_balance_moves_by_the_idle_count<P: Policy>() {
    assert_eq!(KHAN_IDLE_CPUS_PER_JIFFY, 64);
    assert_eq!(next_balance_after_a_pass::<Patched>(130), (5, 130));
    assert_eq!(next_balance_after_a_pass::<P>(130), (5 + 130 / 64, 130));
    assert_eq!(next_balance_after_a_pass::<P>(63), (5, 63));
    assert_eq!(next_balance_after_a_pass::<P>(199), (5 + 3, 199));
}

#[test]
fn khan_next_balance_scales_the_published_deadline() {
    khan_next_balance_moves_by_the_idle_count::<KhanNextBalance>();
    khan_next_balance_moves_by_the_idle_count::<Khan>();
}

/// Khan 1, as the busy tick sees it: a jiffy after the earliest idle deadline, `Patched`
/// kicks a balance pass and the scaled deadline does not yet.
#[test]
fn khan_next_balance_defers_the_due_kick() {
    fn due_at<P: Policy>(after: usize) -> KickDecision<256> {
        let w = World::<P, 256, 4>::new(200);
        for i in 2..200 {
            w.enter(i);
            w.m.rq(w.cpu(i)).set_next_balance(w.now().add(5));
        }
        w.m.nohz_idle_balance_pass(w.cpu(2), NohzFlags::STATS | NohzFlags::NEXT, &*w.p);
        w.busy(0, 2);
        w.advance(after);
        w.m.nohz_balancer_kick(w.cpu(0), &*w.p)
    }
    assert!(matches!(
        due_at::<Patched>(5),
        KickDecision::Kick { flags: SB, .. }
    ));
    // 198 idle CPUs: 3 jiffies later.
    assert_eq!(due_at::<KhanNextBalance>(5), KickDecision::NoFlags);
    assert_eq!(due_at::<KhanNextBalance>(7), KickDecision::NoFlags);
    assert!(matches!(
        due_at::<KhanNextBalance>(8),
        KickDecision::Kick { flags: SB, .. }
    ));
}

/// Idle CPUs 2, 3, 4, 5 and 7 of 8; CPU 4 is NO_HZ_FULL (not housekeeping); CPU 0 is busy.
fn round_robin_world<P: Policy>() -> World<P> {
    let w = World::<P>::new(8);
    for i in [2, 3, 4, 5, 7] {
        w.enter(i);
    }
    w.m.housekeeping().clear(w.cpu(4));
    w.busy(0, 2);
    w
}

fn picks<P: Policy>(w: &World<P>, by: usize, n: usize) -> Vec<Option<usize>> {
    (0..n)
        .map(|_| w.m.find_new_ilb(w.cpu(by)).map(|c| c.index()))
        .collect()
}

/// Khan 2: successive picks walk the idle housekeeping CPUs round robin from
/// `nohz.ilb_cpu_last + 1` (0 on a fresh machine), wrapping, skipping the NO_HZ_FULL CPU and
/// the kicker; `Patched` takes the lowest every time.
fn round_robin_picks_successive_idle_housekeeping_cpus<P: Policy>() {
    let w = round_robin_world::<Patched>();
    assert_eq!(picks(&w, 0, 3), [Some(2); 3]);

    let w = round_robin_world::<P>();
    let got = picks(&w, 0, 6);
    assert_eq!(got, [2, 3, 5, 7, 2, 3].map(Some));
    // The kicker is never its own ILB: from CPU 5, after the last pick (3), 5 is skipped.
    assert_eq!(picks(&w, 5, 2), [Some(7), Some(2)]);
    // A CPU no longer idle is skipped, and a scan that picks nothing stores nothing.
    w.m.rq(w.cpu(3)).set_nr_running(1);
    assert_eq!(picks(&w, 0, 1), [Some(5)]);
    for i in [2, 5, 7] {
        w.m.rq(w.cpu(i)).set_nr_running(1);
    }
    assert_eq!(picks(&w, 0, 1), [None]);
    w.m.rq(w.cpu(2)).set_nr_running(0);
    w.m.rq(w.cpu(7)).set_nr_running(0);
    assert_eq!(
        picks(&w, 0, 2),
        [Some(7), Some(2)],
        "on from 5, the last pick"
    );
}

#[test]
fn khan_round_robin_spreads_find_new_ilb() {
    round_robin_picks_successive_idle_housekeeping_cpus::<KhanRoundRobin>();
    round_robin_picks_successive_idle_housekeeping_cpus::<Khan>();
}

/// Khan 2 through `kick_ilb`: each BALANCE kick's IPI goes to the next idle CPU.
#[test]
fn khan_round_robin_kicks_go_round() {
    let w = round_robin_world::<KhanRoundRobin>();
    let mut sent = Vec::new();
    for _ in 0..5 {
        match w.m.kick_ilb(w.cpu(0), SB, &*w.p) {
            KickOutcome::Sent(ilb) => {
                sent.push(ilb.index());
                w.m.nohz_csd_ipi(ilb, &*w.p);
            }
            other => panic!("expected an IPI, got {other:?}"),
        }
    }
    assert_eq!(sent, [2, 3, 5, 7, 2]);
    assert_eq!(w.ipis(), [(0, 2), (0, 3), (0, 5), (0, 7), (0, 2)]);
}

/// Registered idle CPUs 2 and 3, both NO_HZ_FULL (no housekeeping CPU idle); busy CPU 0 with
/// two tasks and busy CPU 1; a STATS|NEXT pass done, so balancing is due now and STATS is not.
fn no_idle_housekeeping<P: Policy>() -> World<P> {
    let w = World::<P>::new(4);
    w.enter(2);
    w.enter(3);
    w.m.nohz_idle_balance_pass(w.cpu(3), NohzFlags::STATS | NohzFlags::NEXT, &*w.p);
    w.m.housekeeping().clear(w.cpu(2));
    w.m.housekeeping().clear(w.cpu(3));
    w.busy(0, 2);
    w.busy(1, 1);
    w.p.take_events();
    w
}

/// Hegde, due path: with no idle housekeeping CPU the kick returns before its tests and
/// before `kick_ilb`, so `nohz.next_balance` stays; `Patched` goes on to `kick_ilb`, which
/// moves it to the next jiffy and finds no ILB.
#[test]
fn hegde_bails_out_before_the_due_kick() {
    let w = no_idle_housekeeping::<Patched>();
    let now = w.now();
    assert_eq!(w.m.nohz().next_balance(), now);
    assert_eq!(
        w.m.nohz_balancer_kick(w.cpu(0), &*w.p),
        KickDecision::Kick {
            flags: SB,
            outcome: KickOutcome::NoIlb
        }
    );
    assert_eq!(w.m.nohz().next_balance(), now.add(1));

    let w = no_idle_housekeeping::<HegdeHk>();
    assert_eq!(
        w.m.nohz_balancer_kick(w.cpu(0), &*w.p),
        KickDecision::EmptyMask
    );
    assert_eq!(w.m.nohz().next_balance(), now, "no kick_ilb, no move");
    assert!(w.ipis().is_empty());

    // One idle housekeeping CPU: the kernel's kick, to it.
    w.m.housekeeping().set(w.cpu(3));
    assert_eq!(
        w.m.nohz_balancer_kick(w.cpu(0), &*w.p),
        KickDecision::Kick {
            flags: SB,
            outcome: KickOutcome::Sent(w.cpu(3))
        }
    );
}

/// Hegde, not-due path: blocked load past `nohz.next_blocked` asks for STATS; with no idle
/// housekeeping CPU the kick returns with no STATS kick, where `Patched` goes to `kick_ilb`.
#[test]
fn hegde_bails_out_before_the_stats_kick() {
    fn stats_tick<P: Policy>(hk3: bool) -> KickDecision<8> {
        let w = no_idle_housekeeping::<P>();
        if hk3 {
            w.m.housekeeping().set(w.cpu(3));
        }
        w.advance(40);
        w.m.nohz()
            .set_next_balance_for_tests(w.now().add(10), w.now());
        assert!(w.m.nohz().has_blocked_load());
        assert!(w.now().is_after(w.m.nohz().next_blocked()));
        w.m.nohz_balancer_kick(w.cpu(0), &*w.p)
    }
    assert_eq!(
        stats_tick::<Patched>(false),
        KickDecision::Kick {
            flags: NohzFlags::STATS,
            outcome: KickOutcome::NoIlb
        }
    );
    assert_eq!(stats_tick::<HegdeHk>(false), KickDecision::EmptyMask);
    for decision in [stats_tick::<Patched>(true), stats_tick::<HegdeHk>(true)] {
        assert!(matches!(
            decision,
            KickDecision::Kick {
                flags: NohzFlags::STATS,
                outcome: KickOutcome::Sent(_)
            }
        ));
    }
}

/// Hegde, not due and nothing asked for: the kick ends at `out` as the kernel's, without the
/// housekeeping test (NEXT alone would still go to `kick_ilb`).
#[test]
fn hegde_leaves_a_not_due_tick_without_stats_alone() {
    let w = no_idle_housekeeping::<HegdeHk>();
    w.m.nohz()
        .set_next_balance_for_tests(w.now().add(10), w.now());
    assert_eq!(
        w.m.nohz_balancer_kick(w.cpu(0), &*w.p),
        KickDecision::NoFlags
    );
    w.enter(1);
    w.m.housekeeping().clear(w.cpu(1));
    assert_eq!(
        w.m.nohz_balancer_kick(w.cpu(0), &*w.p),
        KickDecision::Kick {
            flags: NohzFlags::NEXT,
            outcome: KickOutcome::NoIlb
        }
    );
}

/// Khan 2, as posted, spreads the kicks of one jiffy too: `kick_ilb`'s pre-check ("the
/// chosen CPU already has these bits") is per target, so where `Patched` sends the jiffy's
/// first NEXT kick and finds it pending for every later kicker, round robin picks a new CPU
/// for each kicker and sends each one an IPI (one ILB pass per busy tick while
/// `nohz.needs_update` stays set: the engine's `frontier` shows it).
#[test]
fn khan_round_robin_no_longer_coalesces_the_kicks_of_a_jiffy() {
    fn kicks<P: Policy>() -> Vec<KickOutcome<8>> {
        let w = round_robin_world::<P>();
        [0, 1, 6]
            .map(|by| w.m.kick_ilb(w.cpu(by), NohzFlags::NEXT, &*w.p))
            .to_vec()
    }
    let w = World::<Patched>::new(8);
    let c = |i| w.cpu(i);
    assert_eq!(
        kicks::<Patched>(),
        [
            KickOutcome::Sent(c(2)),
            KickOutcome::AlreadyPending(c(2)),
            KickOutcome::AlreadyPending(c(2))
        ]
    );
    assert_eq!(
        kicks::<KhanRoundRobin>(),
        [
            KickOutcome::Sent(c(2)),
            KickOutcome::Sent(c(3)),
            KickOutcome::Sent(c(5))
        ]
    );
}

/// Hegde on a machine where every CPU is a housekeeping one (no NO_HZ_FULL CPU): the one
/// difference from `Patched` is the decision reported when nobody is registered and STATS is
/// due before balancing is: `Patched` goes to `out` and asks `kick_ilb`, which finds no ILB
/// (without BALANCE it moves nothing); Hegde returns at its housekeeping test. The machine is left
/// the same by both (the reference model says the same: `hegde_hk_machine_follows_the_model`).
#[test]
fn hegde_without_nohz_full_differs_from_patched_only_in_the_reported_decision() {
    type Seen = (Vec<usize>, bool, bool, usize, usize, Vec<(usize, usize)>);
    fn stats_tick_with_nobody_registered<P: Policy>() -> (KickDecision<8>, Seen) {
        let w = World::<P>::new(4);
        // CPU 2 registers (nohz.has_blocked_load set) and leaves.
        w.enter(2);
        w.busy(2, 1);
        w.tick(2);
        w.busy(0, 2);
        w.advance(40);
        w.m.nohz()
            .set_next_balance_for_tests(w.now().add(10), w.now());
        assert!(w.mask().is_empty() && w.m.nohz().has_blocked_load());
        let d = w.m.nohz_balancer_kick(w.cpu(0), &*w.p);
        let n = w.m.nohz();
        let seen = (
            w.mask(),
            n.has_blocked_load(),
            n.needs_update(),
            n.next_balance().get(),
            n.next_blocked().get(),
            w.ipis(),
        );
        (d, seen)
    }
    let (pt, pt_seen) = stats_tick_with_nobody_registered::<Patched>();
    let (hg, hg_seen) = stats_tick_with_nobody_registered::<HegdeHk>();
    // (NEXT too: CPU 2's entry set nohz.needs_update, which only an ILB pass clears.)
    assert_eq!(
        pt,
        KickDecision::Kick {
            flags: NohzFlags::STATS | NohzFlags::NEXT,
            outcome: KickOutcome::NoIlb
        }
    );
    assert_eq!(hg, KickDecision::EmptyMask);
    assert_eq!(hg_seen, pt_seen, "the same machine after the tick");
}
