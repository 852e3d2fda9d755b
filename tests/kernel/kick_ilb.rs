//! `kick_ilb` and `find_new_ilb`: ILB choice, the pre-check, csd ownership.

use nohz::KickOutcome;
use nohz::for_each_policy;
use nohz::testing::World;
use nohz::{NohzFlags, Policy};

const S: NohzFlags = NohzFlags::STATS;
const SB: NohzFlags = NohzFlags::STATS.union(NohzFlags::BALANCE);

fn balance_bumps_next_balance_even_without_an_ilb<P: Policy>() {
    let w = World::<P>::new(4);
    w.busy(0, 2);
    let before = w.m.nohz().next_balance();
    assert_eq!(w.m.kick_ilb(w.cpu(0), S, &*w.p), KickOutcome::NoIlb);
    assert_eq!(w.m.nohz().next_balance(), before, "STATS alone leaves it");
    assert_eq!(w.m.kick_ilb(w.cpu(0), SB, &*w.p), KickOutcome::NoIlb);
    assert_eq!(w.m.nohz().next_balance(), w.now().add(1));
    assert!(w.ipis().is_empty());
}

fn find_new_ilb_takes_the_first_idle_housekeeping_cpu_but_self<P: Policy>() {
    let w = World::<P>::new(6);
    for i in [1, 2, 3, 5] {
        w.enter(i);
    }
    // CPU 1 kicks itself out of the race; CPU 2 is NO_HZ_FULL; CPU 3 just got a wakeup.
    w.m.housekeeping().clear(w.cpu(2));
    w.m.rq(w.cpu(3)).set_ttwu_pending(true);
    assert_eq!(w.m.find_new_ilb(w.cpu(1)), Some(w.cpu(5)));
    assert_eq!(w.m.find_new_ilb(w.cpu(0)), Some(w.cpu(1)));
    w.m.rq(w.cpu(5)).set_nr_running(1);
    assert_eq!(w.m.find_new_ilb(w.cpu(1)), None);
}

fn owner_sends_later_kickers_ride_along<P: Policy>() {
    let w = World::<P>::new(4);
    w.enter(3);
    assert_eq!(
        w.m.kick_ilb(w.cpu(0), S, &*w.p),
        KickOutcome::Sent(w.cpu(3))
    );
    assert!(w.m.rq(w.cpu(3)).csd_busy());
    // Same bits again: the pre-check stops it before any write.
    assert_eq!(
        w.m.kick_ilb(w.cpu(1), S, &*w.p),
        KickOutcome::AlreadyPending(w.cpu(3))
    );
    // New bits join the kick in flight; no second IPI.
    assert_eq!(
        w.m.kick_ilb(w.cpu(2), NohzFlags::NEXT, &*w.p),
        KickOutcome::RodeAlong(w.cpu(3))
    );
    assert_eq!(w.m.rq(w.cpu(3)).nohz_flags().load(), S | NohzFlags::NEXT);
    assert_eq!(w.ipis(), [(0, 3)]);
    // The handler consumes all of it; the next kick owns the csd again.
    w.m.nohz_csd_ipi(w.cpu(3), &*w.p);
    assert!(!w.m.rq(w.cpu(3)).csd_busy());
    assert_eq!(
        w.m.kick_ilb(w.cpu(1), S, &*w.p),
        KickOutcome::Sent(w.cpu(3))
    );
    assert_eq!(w.ipis(), [(0, 3), (1, 3)]);
    assert_eq!(w.warnings(), 0);
}

fn newilb_alone_does_not_own_the_csd<P: Policy>() {
    let w = World::<P>::new(4);
    w.enter(3);
    w.m.rq(w.cpu(3)).set_avg_idle(u64::MAX);
    w.advance(1);
    // CPU 3's newidle asked for a local refresh: NEWILB only.
    w.m.sched_balance_newidle(w.cpu(3), &*w.p);
    assert_eq!(w.m.rq(w.cpu(3)).nohz_flags().load(), NohzFlags::NEWILB);
    assert_eq!(
        w.m.kick_ilb(w.cpu(0), S, &*w.p),
        KickOutcome::Sent(w.cpu(3))
    );
}

for_each_policy!(
    balance_bumps_next_balance_even_without_an_ilb,
    find_new_ilb_takes_the_first_idle_housekeeping_cpu_but_self,
    owner_sends_later_kickers_ride_along,
    newilb_alone_does_not_own_the_csd,
);
