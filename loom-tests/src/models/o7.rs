//! O7 (spec §6) for `Scalable`: `nohz_balance_enter_idle` reads `nohz.has_blocked_load` and
//! `nohz.needs_update` before storing 1, on both of its paths, against `_nohz_idle_balance`.
//!
//! - Registration path with the flags already 1 (another CPU registered earlier): the new CPU
//!   may read a 1 that the racing ILB pass is about to clear and store nothing. The O1/O2
//!   fences still make the pass see its mask bit (store buffering), so nothing is lost.
//! - Idempotent path (a registered CPU re-entering idle with its tick stopped): the kernel
//!   stores blindly and accepts that an ILB may clear the flag and read this CPU's rq flag as
//!   0 (O6). Read-before-write without a barrier would lose the flag outright, so `Scalable`
//!   fences there (`NOHZ_ENTER_IDLE_REPEAT_FENCE`): either the pass sees `rq.has_blocked_load`
//!   = 1 and decays it, or this CPU reads the pass's 0 and stores 1. `Patched`'s blind store
//!   without a barrier fails the same check (the imprecision O6 accepts), kept as an
//!   expected-failure test.

use loom::thread;
use nohz::{Jiffies, Machine, NohzFlags, Policy};
use nohz_testing::{Event, World};

/// CPU 2 registered before the threads (so both flags are 1); main = ILB (CPU 0) runs a
/// STATS|NEXT pass while a spawned CPU 1 registers (`o1_o2::race` with a CPU registered
/// earlier). After both: the pass visited CPU 1, or both flags ended 1.
pub fn register_with_flags_set<P: Policy>() -> crate::Explored {
    crate::model_cases(super::o1_o2::CASES, |cases| {
        super::o1_o2::race::<P, 3>(true, ["O7", "O7"], cases)
    })
}

/// The assertion message of the idempotent-path model.
pub const LOST: &str = "O6/O7: CPU 1's blocked load was neither decayed nor flagged";

/// The outcomes the idempotent-path race must reach.
pub const REPEAT_CASES: &[&str] = &[
    "the pass decayed CPU 1's new load",
    "the pass missed it, nohz.has_blocked_load ended 1",
];

/// CPUs 1 and 2 registered; a completed STATS pass decayed CPU 1 but not CPU 2, so
/// `nohz.has_blocked_load` is 1 and `rq(1).has_blocked_load` is 0. One jiffy later, a spawned
/// CPU 1 re-enters idle (the idempotent path) while main = ILB (CPU 0) runs another STATS pass,
/// in which CPU 2 decays fully. After both: CPU 1's new blocked load was decayed by the pass,
/// or `nohz.has_blocked_load` is 1 so that a later pass will.
pub fn repeat_enter_idle_against_ilb<P: Policy>() -> crate::Explored {
    crate::model_cases(REPEAT_CASES, |cases| {
        let (m, p, nr) = World::<P, 3>::shared();
        let [ilb, again, other] = [0, 1, 2].map(|i| nr.cpu(i).unwrap());
        m.nohz_balance_enter_idle(again, &*p);
        m.nohz_balance_enter_idle(other, &*p);
        p.set_blocked_load_remains(other, true);
        p.clock().advance(1);
        m.nohz_idle_balance_pass(ilb, NohzFlags::STATS, &*p);
        assert!(!m.rq(again).has_blocked_load() && m.rq(other).has_blocked_load());
        assert!(m.nohz().has_blocked_load());
        p.set_blocked_load_remains(other, false);
        p.clock().advance(1);
        p.take_events();

        let (m1, p1) = (m.clone(), p.clone());
        let t = thread::spawn(move || m1.nohz_balance_enter_idle(again, &*p1));
        m.nohz_idle_balance_pass(ilb, NohzFlags::STATS, &*p);
        t.join().unwrap();

        let decayed = p.events().contains(&Event::BlockedAverages {
            by: ilb,
            cpu: again,
        });
        assert!(
            !m.rq(again).has_blocked_load() || m.nohz().has_blocked_load(),
            "{LOST}"
        );
        cases.hit(REPEAT_CASES[usize::from(!decayed)]);
    })
}

/// The assertion message of the kick-deadline model.
pub const SKIPPED: &str = "kick deadline: the not-due test would skip a kick Patched sends";

/// The outcomes the kick-deadline race must reach.
pub const DEADLINE_CASES: &[&str] = &[
    "the registration's needs_update survived the pass",
    "the pass cleared needs_update after the registration",
];

/// Whether the kick's full (`Patched`) not-due test would find something to do at `now`.
fn kick_due<P: Policy, const N: usize, const W: usize>(m: &Machine<P, N, W>, now: Jiffies) -> bool {
    let nohz = m.nohz();
    nohz.needs_update()
        || (nohz.has_blocked_load() && now.is_after(nohz.next_blocked()))
        || !now.is_before(nohz.next_balance())
}

/// `Scalable`'s precomputed kick deadline against its writers: main = ILB (CPU 0) runs a
/// STATS|NEXT pass (clearing `needs_update`, then refreshing the deadline at its end) while a
/// spawned CPU 1 registers (setting `needs_update` and bumping the deadline word stale), with balancing
/// not otherwise due. After both, the one-load test may say "not due" only where the full test
/// agrees.
pub fn deadline_against_ilb<P: Policy>() -> crate::Explored {
    crate::model_cases(DEADLINE_CASES, |cases| {
        let (m, p, nr) = World::<P, 2>::shared();
        let (ilb, idle) = (nr.cpu(0).unwrap(), nr.cpu(1).unwrap());
        // Balancing not due for a while: the rqs' deadlines, folded by a NEXT pass.
        for cpu in nr.iter() {
            m.rq(cpu).set_next_balance(Jiffies::new(20));
        }
        m.nohz_balance_enter_idle(ilb, &*p);
        m.nohz_idle_balance_pass(ilb, NohzFlags::STATS | NohzFlags::NEXT, &*p);
        let now = p.clock().get();
        assert!(!kick_due(&*m, now), "the setup leaves nothing due");

        let (m1, p1) = (m.clone(), p.clone());
        let t = thread::spawn(move || m1.nohz_balance_enter_idle(idle, &*p1));
        m.nohz_idle_balance_pass(ilb, NohzFlags::STATS | NohzFlags::NEXT, &*p);
        t.join().unwrap();

        let not_due = m.nohz().kick_deadline().is_some_and(|d| now.is_before(d));
        assert!(!(not_due && kick_due(&*m, now)), "{SKIPPED}");
        cases.hit(DEADLINE_CASES[usize::from(!m.nohz().needs_update())]);
    })
}
