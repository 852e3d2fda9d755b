//! Seed 000 side by side: `Legacy` (v6.19) against `Patched`.

use nohz::{KickDecision, KickOutcome};
use nohz::{Legacy, NohzFlags, Patched, Policy};
use nohz_testing::World;

/// The counter is a second shared word written on every registration and exit; the mask is
/// the only one under `Patched`. Same decisions otherwise.
#[test]
fn legacy_counter_follows_the_mask_patched_has_none() {
    let l = World::<Legacy>::new(6);
    let p = World::<Patched>::new(6);
    for step in [1usize, 2, 3, 2, 4, 1] {
        if !l.mask().contains(&step) {
            l.enter(step);
            p.enter(step);
        } else {
            l.busy(step, 1);
            p.busy(step, 1);
            l.tick(step);
            p.tick(step);
            l.idle(step);
            p.idle(step);
        }
        assert_eq!(l.mask(), p.mask());
        assert_eq!(l.m.nohz().nr_cpus() as usize, l.mask().len());
        assert_eq!(p.m.nohz().nr_cpus(), 0);
    }
}

/// "Is any CPU tickless?" as the busy tick asks it once balancing is due: `Legacy` reads its
/// counter, `Patched` tests the mask; both answer yes exactly while a CPU is registered.
#[test]
fn both_ask_whether_anyone_is_tickless_their_own_way_and_agree() {
    let l = World::<Legacy>::new(4);
    let p = World::<Patched>::new(4);
    assert!(!l.m.nohz_anyone_tickless(l.cpu(0)), "nobody registered");
    assert!(!p.m.nohz_anyone_tickless(p.cpu(0)));
    l.enter(2);
    p.enter(2);
    assert!(l.m.nohz_anyone_tickless(l.cpu(0)));
    assert!(p.m.nohz_anyone_tickless(p.cpu(0)));
    l.busy(2, 1);
    p.busy(2, 1);
    l.tick(2);
    p.tick(2);
    assert!(
        !l.m.nohz_anyone_tickless(l.cpu(0)),
        "CPU 2's busy tick took it out"
    );
    assert!(!p.m.nohz_anyone_tickless(p.cpu(0)));
}

/// After the last idle CPU left, blocked load is still flagged. `Legacy` sees nr_cpus == 0 and
/// returns before reading anything else; `Patched` checks the time first and, while balancing
/// is not yet due, still calls kick_ilb with STATS, which finds no ILB (the narrow window the
/// seed accepts). Once balancing is due, `Patched` returns on the empty mask, dropping the
/// STATS and NEXT it had collected.
fn empty_mask_window<P: Policy>() -> (KickDecision<8>, KickDecision<8>) {
    let w = World::<P>::new(4);
    w.enter(2);
    w.advance(1);
    w.busy(2, 1);
    w.tick(2); // CPU 2 leaves; nohz.has_blocked_load stays 1
    w.busy(0, 2);
    // Balancing not due for a while; blocked-load refresh overdue.
    w.advance(40);
    // Make nohz.next_balance lie ahead by kicking once with BALANCE from a CPU with work,
    // which moves it to jiffies + 1; then check at that jiffy (not due: now < now + 1).
    w.m.kick_ilb(w.cpu(0), NohzFlags::STATS | NohzFlags::BALANCE, &*w.p);
    let not_due = w.m.nohz_balancer_kick(w.cpu(0), &*w.p);
    w.advance(1);
    let due = w.m.nohz_balancer_kick(w.cpu(0), &*w.p);
    (not_due, due)
}

#[test]
fn check_order_legacy_stops_at_the_counter_patched_checks_time_first() {
    let (not_due, due) = empty_mask_window::<Legacy>();
    assert_eq!(not_due, KickDecision::NobodyTickless);
    assert_eq!(due, KickDecision::NobodyTickless);
    let (not_due, due) = empty_mask_window::<Patched>();
    assert_eq!(
        not_due,
        KickDecision::Kick {
            flags: NohzFlags::STATS | NohzFlags::NEXT,
            outcome: KickOutcome::NoIlb
        }
    );
    assert_eq!(due, KickDecision::EmptyMask);
}
