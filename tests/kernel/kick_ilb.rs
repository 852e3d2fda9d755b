//! `kick_ilb` and `find_new_ilb`: ILB choice, the pre-check, csd ownership.

use nohz::KickOutcome;
use nohz::{NohzFlags, Policy};
use nohz_testing::World;
use nohz_testing::for_each_policy;

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

/// A handler that consumed the bits without freeing the csd (the order the protocol forbids,
/// planted as `nohz_csd_ipi_without_release`) leaves the next owner a busy csd: counted, no
/// IPI. The dying CPU's flush clears both, so the CPU's next life starts clean.
#[test]
fn a_busy_csd_is_counted_not_sent() {
    use nohz::{Patched, Warning};
    let w = World::<Patched>::new(4);
    let (c0, c3) = (w.cpu(0), w.cpu(3));
    w.enter(3);
    assert_eq!(
        w.m.kick_ilb(c0, NohzFlags::STATS, &*w.p),
        KickOutcome::Sent(c3)
    );
    assert!(nohz_testing::nohz_csd_ipi_without_release(&w.m, c3, &*w.p));
    assert!(w.m.rq(c3).csd_busy(), "the csd was never released");
    assert_eq!(
        w.m.kick_ilb(c0, NohzFlags::STATS, &*w.p),
        KickOutcome::CsdBusy(c3)
    );
    assert_eq!(w.m.warnings().on_cpu(c0), 1);
    assert_eq!(w.m.warnings().of_kind(Warning::CsdBusy), 1);
    assert_eq!(w.ipis().len(), 1);
    w.m.sched_cpu_deactivate(c3, &*w.p).unwrap();
    w.m.cpu_dying(c3, &*w.p).unwrap();
    assert!(!w.m.rq(c3).csd_busy());
    assert_eq!(w.m.rq(c3).nohz_flags().load(), NohzFlags::empty());
}
