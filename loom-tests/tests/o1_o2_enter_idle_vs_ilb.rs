//! O1/O2 (spec §6): `nohz_balance_enter_idle` on an idle CPU against `_nohz_idle_balance`
//! with STATS|NEXT on the ILB, driving the crate's real `Machine`.
//!
//! Forbidden: the ILB's scan misses the newly registered CPU *and* its clear of
//! `nohz.has_blocked_load` (`nohz.needs_update`) lands after that CPU's store of 1, leaving the
//! flag 0: nobody would refresh the CPU's blocked load (fold its `next_balance`). Store
//! buffering, so it takes a SeqCst fence on both sides; each weakening of either fence fails.
#![cfg(nohz_loom)]

use loom::sync::Arc;
use loom::thread;
use nohz::sync::mutation::with_weakened;
use nohz::sync::{NOHZ_ENTER_IDLE_FENCE, NOHZ_ILB_FENCE, Site};
use nohz::testing::{Event, HostPlatform};
use nohz::{Jiffies, Machine, NohzFlags, NrCpuIds, Patched, Policy};
use std::panic::{AssertUnwindSafe, catch_unwind};

fn enter_idle_against_ilb<P: Policy>() {
    loom_tests::model(|| {
        let p = Arc::new(HostPlatform::<2>::new(NrCpuIds::full(), Jiffies::new(0)));
        let m = Arc::new(Machine::<P, 2, 1>::new());
        let nr = m.init(2, &*p).unwrap();
        let (ilb, idle) = (nr.cpu(0).unwrap(), nr.cpu(1).unwrap());

        let (m1, p1) = (m.clone(), p.clone());
        let t = thread::spawn(move || m1.enter_idle(idle, &*p1));
        m.idle_balance_pass(ilb, NohzFlags::STATS | NohzFlags::NEXT, &*p);
        t.join().unwrap();

        // Every CPU the scan visits gets its rq clock updated (its balance is due from init).
        let visited = p.events().contains(&Event::RqClock { by: ilb, cpu: idle });
        assert!(
            visited || m.nohz().has_blocked_load(),
            "O1: scan missed CPU 1 and nohz.has_blocked_load ended 0"
        );
        assert!(
            visited || m.nohz().needs_update(),
            "O2: scan missed CPU 1 and nohz.needs_update ended 0"
        );
    });
}

#[test]
fn patched_forbids_the_lost_flag() {
    enter_idle_against_ilb::<Patched>();
}

#[test]
fn legacy_forbids_the_lost_flag() {
    enter_idle_against_ilb::<nohz::Legacy>();
}

/// Each weaker form of either fence is killed.
#[test]
fn every_weakening_of_either_fence_is_killed() {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut survivors = Vec::new();
    for site in [&NOHZ_ENTER_IDLE_FENCE, &NOHZ_ILB_FENCE] as [&'static Site; 2] {
        for &w in site.weakenings() {
            let run = || with_weakened(site, w, enter_idle_against_ilb::<Patched>).unwrap();
            if catch_unwind(AssertUnwindSafe(run)).is_ok() {
                survivors.push((site.name(), w));
            }
        }
    }
    std::panic::set_hook(hook);
    assert!(survivors.is_empty(), "mutants survived: {survivors:?}");
}
