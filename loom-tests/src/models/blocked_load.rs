//! `update_blocked_load_status` (spec §5.5, §5.6): the ILB's clear of a visited CPU's
//! `rq.has_blocked_load` after the platform's decay, against that CPU running a task and going
//! idle again, which sets the flag anew without a lock.
//!
//! The kernel clears under the target's rq lock, and the owner enqueues load under that same
//! lock, so a lost set can only be one whose load the decay saw. The crate clears after the
//! platform's call returned, outside the lock, and its clear covers only the sets up to a
//! reading of the set count taken before the call (`Rq::clear_has_blocked_load`). Here the
//! platform's decay is a critical section under a loom `Mutex` (the rq lock) over the model's
//! load word, and the owner takes the same mutex to add its load. What must hold at the end:
//!
//! - if any load is left, `rq(1).has_blocked_load` is set (so `update_nohz_stats` does not skip
//!   CPU 1), and a later STATS pass decays it;
//! - in particular, if the owner added its load after the decay's critical section (a set made
//!   after the decay began), the rq flag is set, and with one pass so is `nohz.has_blocked_load`
//!   (that decay began after the pass cleared the global flag, and the lock orders it before
//!   the owner's store of 1).
//!
//! With [`Owner::NewidleFirst`], CPU 1 also clears its own flag: before its newidle domain walk
//! it refreshes its own blocked averages (the kernel's
//! `__sched_balance_update_blocked_averages(this_rq)`: stamp, decay under the rq lock,
//! `update_blocked_load_status`), then enters idle and sets the flag again, while the ILB's
//! pass decays and clears from its own reading. The same properties must hold.
//!
//! All of it holds with every access of the flag `Relaxed`: that a clear never covers a later
//! set is coherence of one location (the single-writer set count), and the link between a set
//! and its load is the mutex's own release/acquire. So
//! there is no site to weaken here; what the model kills is the *unconditional* clear
//! ([`Clear::Unconditional`], through `nohz_testing::clear_has_blocked_load_unconditionally`),
//! the order the crate had before.

use loom::sync::atomic::{AtomicBool, Ordering::Acquire, Ordering::Release};
use loom::sync::{Arc, Mutex};
use loom::thread;
use nohz::{NohzFlags, Policy};
use nohz_testing::{Event, World, clear_has_blocked_load_unconditionally, set_busy, set_idle};
use std::sync::atomic::{AtomicBool as StdBool, Ordering::Relaxed};

/// The outcomes the race must reach.
pub const CASES: &[&str] = &[
    "the decay saw CPU 1's new load: nothing to clear",
    "the clear took effect, then CPU 1 set the flag again",
    "the clear left CPU 1's set alone: it landed after the reading",
    "the pass skipped CPU 1, busy",
];

/// The outcomes the race must reach when CPU 1 refreshes its own blocked load through newidle
/// before its idle entry ([`Owner::NewidleFirst`]).
pub const NEWIDLE_CASES: &[&str] = &[
    "CPU 1's own refresh found nothing left and cleared its flag; its idle entry set it again",
    "CPU 1's own refresh left load: its flag stayed",
    "the ILB's clear left CPU 1's set alone: it landed after the reading",
    "the ILB found CPU 1 refreshed this jiffy and did not decay it",
];

/// The assertion message when a set made after the decay began is lost.
pub const LOST: &str =
    "blocked load: CPU 1's set after the decay began was erased; its new load is never decayed";

/// How the ILB clears after a decay that found nothing left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clear {
    /// The crate's own clear: it covers the sets up to the reading taken before the decay.
    Conditional,
    /// The order before the fix: the platform's call returns and the flag is cleared whatever
    /// was set since (played inside the decay hook, after the lock is dropped, with the hook
    /// then answering "load remains" so that the crate's own clear stays out of it).
    Unconditional,
}

/// How many ILB passes race CPU 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Passes {
    /// CPU 0's pass alone.
    One,
    /// CPU 0's pass and, on a third thread, CPU 2's (a softirq ILB and a newidle STATS pass at
    /// once, say): both may decay CPU 1 and clear from their own readings.
    Two,
}

/// What CPU 1 does between the task that leaves its load and its idle entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// Goes straight to idle; its task leaves two units of load.
    EntersIdle,
    /// Runs `sched_balance_newidle` first, whose domain walk begins by refreshing CPU 1's own
    /// blocked averages (a decay under the rq lock, and a clear if nothing is left); its task
    /// leaves one unit, so that its own refresh can find nothing left.
    NewidleFirst,
}

/// The rq lock and what it protects, in the model: CPU 1's load (in units), and how many
/// decays have run (all of them, and CPU 1's own).
#[derive(Debug)]
struct Locked {
    load: u32,
    decays: u32,
    own_decays: u32,
}

/// CPU 1 registered idle with one unit of old blocked load (flag set), a jiffy on. Main = ILB
/// (CPU 0) runs a STATS pass (with [`Passes::Two`], a spawned CPU 2 runs one too); the
/// platform's decay halves the load under the rq lock and answers whether any is left. A
/// spawned CPU 1 runs a task (busy), which leaves blocked load (added under the rq lock),
/// then (with [`Owner::NewidleFirst`]) refreshes its own blocked load through newidle, and
/// re-enters idle with its tick still stopped (`nohz_balance_enter_idle`'s idempotent path: a
/// new set). After all: the properties of the module docs; then a later STATS pass.
pub fn set_against_clear<P: Policy>(
    clear: Clear,
    passes: Passes,
    owner_path: Owner,
) -> crate::Explored {
    let names = match owner_path {
        Owner::EntersIdle => CASES,
        Owner::NewidleFirst => NEWIDLE_CASES,
    };
    crate::model_cases(names, move |cases| {
        let (m, p, nr) = World::<P, 3>::shared();
        let [ilb, owner, other_ilb] = [0, 1, 2].map(|i| nr.cpu(i).unwrap());
        m.nohz_balance_enter_idle(owner, &*p);
        assert!(m.rq(owner).has_blocked_load());
        p.clock().advance(1);

        let rq_lock = Arc::new(Mutex::new(Locked {
            load: 1,
            decays: 0,
            own_decays: 0,
        }));
        // A label: CPU 1's own refresh found nothing left (so its clear ran).
        let own_cleared = std::sync::Arc::new(StdBool::new(false));
        // Model-only: CPU 1's nohz_balance_enter_idle returned (Release), read by the decay (Acquire).
        let set_done = Arc::new(AtomicBool::new(false));
        // A label, not a synchronisation: the first decay saw the set land before its clear.
        let after_reading = std::sync::Arc::new(StdBool::new(false));
        {
            let (m, rq_lock, set_done, after_reading, own_cleared) = (
                m.clone(),
                rq_lock.clone(),
                set_done.clone(),
                after_reading.clone(),
                own_cleared.clone(),
            );
            p.on_update_blocked_averages(move |by, cpu| {
                assert_eq!(cpu, owner, "only CPU 1 is registered");
                let own = by == owner;
                // With two passes, the first decay by an ILB (either) labels the outcome.
                let (first, remains) = {
                    let mut rq = rq_lock.lock().unwrap();
                    rq.load /= 2;
                    rq.decays += 1;
                    if own {
                        rq.own_decays += 1;
                    }
                    (rq.decays - rq.own_decays == 1 && !own, rq.load > 0)
                };
                if remains {
                    return true;
                }
                if own {
                    own_cleared.store(true, Relaxed);
                }
                // The rq lock is dropped; the clear comes next. A set known to have been made
                // by now came after the reading (the decay saw no new load), so the crate's
                // clear must leave it alone.
                if first && set_done.load(Acquire) {
                    after_reading.store(true, Relaxed);
                }
                match clear {
                    Clear::Conditional => false,
                    Clear::Unconditional => {
                        clear_has_blocked_load_unconditionally(m.rq(owner));
                        true
                    }
                }
            });
        }

        let cpu1 = {
            let (m, p, rq_lock, set_done) = (m.clone(), p.clone(), rq_lock.clone(), set_done);
            thread::spawn(move || {
                let rq = m.rq(owner);
                // A task wakes on CPU 1 and runs; when it blocks, its load stays behind.
                set_busy(rq, 1);
                let after_decay = {
                    let mut locked = rq_lock.lock().unwrap();
                    locked.load += match owner_path {
                        Owner::EntersIdle => 2,
                        Owner::NewidleFirst => 1,
                    };
                    locked.decays > 0
                };
                set_idle(rq);
                if owner_path == Owner::NewidleFirst {
                    // The walk refreshes CPU 1's own blocked load first; it pulls nothing.
                    assert!(!m.sched_balance_newidle(owner, &*p));
                }
                // A label only: the clear already took effect when CPU 1 sets the flag again.
                let saw_clear = !rq.has_blocked_load();
                m.nohz_balance_enter_idle(owner, &*p);
                set_done.store(true, Release);
                (after_decay, saw_clear)
            })
        };
        let cpu2 = (passes == Passes::Two).then(|| {
            let (m, p) = (m.clone(), p.clone());
            thread::spawn(move || {
                m.nohz_idle_balance_pass(other_ilb, NohzFlags::STATS, &*p);
            })
        });
        m.nohz_idle_balance_pass(ilb, NohzFlags::STATS, &*p);
        let (after_decay, saw_clear) = cpu1.join().unwrap();
        if let Some(cpu2) = cpu2 {
            cpu2.join().unwrap();
        }

        let (load, decays, own_decays) = {
            let locked = rq_lock.lock().unwrap();
            (locked.load, locked.decays, locked.own_decays)
        };
        assert!(load == 0 || m.rq(owner).has_blocked_load(), "{LOST}");
        if after_decay {
            assert!(m.rq(owner).has_blocked_load(), "{LOST}");
            // With a second pass, that pass may clear the global flag after CPU 1's store of 1
            // and then read CPU 1 as still busy, or its rq flag as not yet set: the staleness
            // of nohz_balance_enter_idle's barrier-less idempotent path that the kernel accepts (spec §6
            // O6), not this model's subject. With one pass, the lock orders it.
            assert!(
                passes == Passes::Two || m.nohz().has_blocked_load(),
                "blocked load: CPU 1 set its flag after the decay, yet nohz.has_blocked_load \
                 ended 0"
            );
        }
        match owner_path {
            Owner::EntersIdle => {
                if decays == 0 {
                    cases.hit(CASES[3]);
                } else if !after_decay {
                    cases.hit(CASES[0]);
                } else if after_reading.load(Relaxed) {
                    cases.hit(CASES[2]);
                } else if saw_clear {
                    cases.hit(CASES[1]);
                }
            }
            Owner::NewidleFirst => {
                assert_eq!(own_decays, 1, "CPU 1's walk refreshes it once");
                if own_cleared.load(Relaxed) {
                    assert!(saw_clear, "CPU 1's own clear covers its own earlier set");
                    cases.hit(NEWIDLE_CASES[0]);
                } else {
                    cases.hit(NEWIDLE_CASES[1]);
                }
                if after_reading.load(Relaxed) {
                    cases.hit(NEWIDLE_CASES[2]);
                }
                if decays == own_decays
                    && m.rq(owner).last_blocked_load_update_tick() == p.clock().get()
                {
                    cases.hit(NEWIDLE_CASES[3]);
                }
            }
        }

        // A later pass finds the flag and decays CPU 1's load again.
        p.clock().advance(1);
        p.take_events();
        m.nohz_idle_balance_pass(ilb, NohzFlags::STATS, &*p);
        let decayed = p.events().contains(&Event::BlockedAverages {
            by: ilb,
            cpu: owner,
        });
        assert!(
            load == 0 || decayed,
            "blocked load: CPU 1 still has load, yet the next STATS pass skipped it"
        );
    })
}
