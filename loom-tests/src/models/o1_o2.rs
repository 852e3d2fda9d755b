//! O1/O2 (spec §6): `nohz_balance_enter_idle` on an idle CPU against `_nohz_idle_balance` with
//! STATS|NEXT on the ILB, driving the crate's real `Machine`.
//!
//! Forbidden: the ILB's scan misses the newly registered CPU *and* its clear of
//! `nohz.has_blocked_load` (`nohz.needs_update`) lands after that CPU's store of 1, leaving the
//! flag 0: nobody would refresh the CPU's blocked load (fold its `next_balance`). Store
//! buffering, so it takes a SeqCst fence on both sides (`NOHZ_ENTER_IDLE_FENCE`,
//! `NOHZ_ILB_FENCE`); each weakening of either fence fails.

use loom::thread;
use nohz::{NohzFlags, Policy};
use nohz_testing::{Event, World};

/// The outcomes the race must reach.
pub const CASES: &[&str] = &[
    "the pass visited the new CPU",
    "the pass missed the new CPU, both flags ended 1",
];

/// Main = the ILB (CPU 0) running a STATS|NEXT pass; one spawned thread = CPU 1 registering
/// with `nohz_balance_enter_idle`. After both: the pass visited CPU 1, or `nohz.has_blocked_load` and
/// `nohz.needs_update` both ended 1 (so a later pass will).
pub fn enter_idle_against_ilb<P: Policy>() -> crate::Explored {
    crate::model_cases(CASES, |cases| race::<P, 2>(false, ["O1", "O2"], cases))
}

/// The registration race on `N` CPUs (CPU 0 the ILB, CPU 1 registering). With `earlier`, CPU 2
/// registered before the threads start, so both flags are already 1 (the O7 variant: a
/// read-before-write policy may then store nothing). `labels` name the two obligations in the
/// assertion messages.
pub fn race<P: Policy, const N: usize>(earlier: bool, labels: [&str; 2], cases: &crate::Cases) {
    let (m, p, nr) = World::<P, N>::shared();
    let (ilb, idle) = (nr.cpu(0).unwrap(), nr.cpu(1).unwrap());
    if earlier {
        m.nohz_balance_enter_idle(nr.cpu(2).unwrap(), &*p);
        assert!(m.nohz().has_blocked_load() && m.nohz().needs_update());
    }

    let (m1, p1) = (m.clone(), p.clone());
    let t = thread::spawn(move || m1.nohz_balance_enter_idle(idle, &*p1));
    m.nohz_idle_balance_pass(ilb, NohzFlags::STATS | NohzFlags::NEXT, &*p);
    t.join().unwrap();

    // Every CPU the scan visits gets its rq clock updated (its balance is due from init).
    let visited = p.events().contains(&Event::RqClock { by: ilb, cpu: idle });
    assert!(
        visited || m.nohz().has_blocked_load(),
        "{}: scan missed CPU 1 and nohz.has_blocked_load ended 0",
        labels[0]
    );
    assert!(
        visited || m.nohz().needs_update(),
        "{}: scan missed CPU 1 and nohz.needs_update ended 0",
        labels[1]
    );
    cases.hit(CASES[usize::from(!visited)]);
}
