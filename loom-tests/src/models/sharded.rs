//! The `Sharded` policy's idle set (spec `sharded-idle.md` §2.6-§2.7): models L1-L8 and the
//! two the spec lists as still to add (the GC clearing the wrong shard's bit, inside L2's
//! two-shard set-up; the NEXT variant of L3).
//!
//! L1-L6 and L8 drive the crate's real `Machine` under a `Sharded` policy, so the mutation
//! runner's weakened sites and code mutants (`nohz::internals::CodeMutant`: the rejected
//! designs of §2.6-§2.7, reachable in loom builds only) are tried on the crate's own code. L7
//! models the *rejected* exact summary, which the crate does not have, on plain loom atomics:
//! it documents why the sticky design was chosen, and its variants' verdicts are asserted
//! by `tests/sharded_idle.rs`.
//!
//! Every model keeps to at most four threads (main included). The obligations:
//!
//! - **S1**: once every operation has finished, a registered CPU's shard is flagged in the
//!   summary (checked as "`nohz_idle_test(cpu)` implies `shard_flagged(shard(cpu))`");
//! - **O1 / O2** (spec §6) under sharding: an ILB pass that cleared `has_blocked_load`
//!   (`needs_update`) either visited a CPU that registered meanwhile, or that CPU's store of 1
//!   survived.

use loom::sync::atomic::{AtomicU64, Ordering, fence};
use loom::thread;
use nohz::sharded::{Contiguous, LowestId};
use nohz::{CpuId, Machine, NohzFlags, Policy, Sharded};
use nohz_testing::{Event, World, set_busy, set_idle};

/// The models' policy: `LowestId` (so which shard the GC visits first is fixed), `Hint`, one
/// CPU per shard unless a model maps them otherwise (`set_shard_map`).
pub type One<const S: usize> = Sharded<S, Contiguous<1>, LowestId>;

fn check_s1<P: Policy, const N: usize, const W: usize>(m: &Machine<P, N, W>, cpu: CpuId<N>) {
    let shard = m.shard_slot(cpu).expect("a CPU in a shard").shard;
    assert!(
        !m.nohz_idle_test(cpu) || m.shard_flagged(shard),
        "S1: CPU {} is registered but its shard {shard} is not flagged",
        cpu.index()
    );
}

/// L1 `s1_sticky_summary`: main = CPU 0's `find_new_ilb` GC'ing CPU 1's stale shard; one
/// thread = CPU 1 registering again.
pub const L1_CASES: &[&str] = &[
    "the GC found CPU 1",
    "the GC found the shard empty; the summary ended flagged",
];

/// L1 (S1): enter against the GC of its shard.
pub fn s1_sticky_summary() -> crate::Explored {
    crate::model_cases(L1_CASES, |cases| {
        let (m, p, nr) = World::<One<2>, 2>::shared();
        let (c0, c1) = (nr.cpu(0).unwrap(), nr.cpu(1).unwrap());
        // CPU 1 registered and left: its shard's bit is stale.
        m.nohz_balance_enter_idle(c1, &*p);
        m.nohz_balance_exit_idle(c1, &*p);
        assert!(m.shard_flagged(1) && m.shard_word(1) == 0);

        let (m1, p1) = (m.clone(), p.clone());
        let t = thread::spawn(move || m1.nohz_balance_enter_idle(c1, &*p1));
        let found = m.find_new_ilb(c0);
        t.join().unwrap();

        check_s1(&m, c1);
        cases.hit(L1_CASES[usize::from(found.is_none())]);
    })
}

/// L2 `s1_summary_rmw` (with the spec's "wrong shard" mutant): two shards sharing one
/// summary word. Main = CPU 2 (shard 1) GC'ing shard 1, stale from CPU 1; one thread = CPU 0
/// (shard 0, not a housekeeping CPU, so the GC looks past it) registering.
pub const L2_CASES: &[&str] = &[
    "CPU 0 flagged shard 0 before the GC",
    "CPU 0 flagged shard 0 after the GC",
];

/// L2 (S1 with two shards in one summary word).
pub fn s1_summary_rmw() -> crate::Explored {
    crate::model_cases(L2_CASES, |cases| {
        let (m, p, nr) = World::<One<3>, 3>::shared();
        m.set_shard_map(|c| usize::from(c.index() != 0)).unwrap();
        let (c0, c1, c2) = (nr.cpu(0).unwrap(), nr.cpu(1).unwrap(), nr.cpu(2).unwrap());
        m.housekeeping().clear(c0);
        m.nohz_balance_enter_idle(c1, &*p);
        set_busy(m.rq(c1), 1);
        m.nohz_balance_exit_idle(c1, &*p);
        set_busy(m.rq(c2), 2);
        assert!(m.shard_flagged(1) && m.shard_word(1) == 0 && !m.shard_flagged(0));

        let (m1, p1) = (m.clone(), p.clone());
        let t = thread::spawn(move || m1.nohz_balance_enter_idle(c0, &*p1));
        let found = m.find_new_ilb(c2);
        let after_gc = !m.shard_flagged(0);
        t.join().unwrap();

        assert_eq!(found, None, "no housekeeping CPU is idle");
        check_s1(&m, c0);
        assert!(
            !m.shard_flagged(1),
            "S2: the GC left shard 1's stale bit (it cleared another shard's)"
        );
        cases.hit(L2_CASES[usize::from(after_gc)]);
    })
}

/// L3 / L3n: which flags the ILB pass clears.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clears {
    /// STATS: `has_blocked_load` (O1).
    Stats,
    /// NEXT: `needs_update` (O2): the variant the spec lists as still to add.
    Next,
}

/// L3 `o1_sharded_walk` outcomes.
pub const L3_CASES: &[&str] = &[
    "the pass visited CPU 1",
    "the pass missed CPU 1, the flag ended 1",
];

/// L3 (O1) and its NEXT variant (O2) under sharding: main = CPU 0 (shard 0) running a pass
/// with `clears`; one thread = CPU 1 (shard 1, its summary bit clear) registering. The walk
/// must read shard 1's word, flagged or not.
pub fn o1_sharded_walk(clears: Clears) -> crate::Explored {
    crate::model_cases(L3_CASES, move |cases| {
        let (m, p, nr) = World::<One<2>, 2>::shared();
        let (ilb, idle) = (nr.cpu(0).unwrap(), nr.cpu(1).unwrap());
        let (m1, p1) = (m.clone(), p.clone());
        let t = thread::spawn(move || m1.nohz_balance_enter_idle(idle, &*p1));
        let flags = match clears {
            Clears::Stats => NohzFlags::STATS,
            Clears::Next => NohzFlags::NEXT,
        };
        m.nohz_idle_balance_pass(ilb, flags, &*p);
        t.join().unwrap();

        let visited = p.events().contains(&Event::RqClock { by: ilb, cpu: idle });
        match clears {
            Clears::Stats => assert!(
                visited || m.nohz().has_blocked_load(),
                "O1 (sharded): scan missed CPU 1 and nohz.has_blocked_load ended 0"
            ),
            Clears::Next => assert!(
                visited || m.nohz().needs_update(),
                "O2 (sharded): scan missed CPU 1 and nohz.needs_update ended 0"
            ),
        }
        cases.hit(L3_CASES[usize::from(!visited)]);
    })
}

/// L4 `enter_gc_ilb` outcomes.
pub const L4_CASES: &[&str] = &["the pass visited CPU 1", "the pass missed CPU 1"];

/// L4 (S1 and O1 together): main = CPU 0 running a STATS pass; one thread = CPU 1
/// re-registering in its stale shard; one thread = CPU 2's `find_new_ilb` GC'ing it.
pub fn enter_gc_ilb() -> crate::Explored {
    crate::model_cases(L4_CASES, |cases| {
        let (m, p, nr) = World::<One<3>, 3>::shared();
        let (c0, c1, c2) = (nr.cpu(0).unwrap(), nr.cpu(1).unwrap(), nr.cpu(2).unwrap());
        m.nohz_balance_enter_idle(c1, &*p);
        m.nohz_balance_exit_idle(c1, &*p);
        set_busy(m.rq(c2), 2);
        // Keep the GC off CPU 0, which runs the pass.
        m.housekeeping().clear(c0);

        let (m1, p1) = (m.clone(), p.clone());
        let enter = thread::spawn(move || m1.nohz_balance_enter_idle(c1, &*p1));
        let m2 = m.clone();
        let gc = thread::spawn(move || {
            m2.find_new_ilb(c2);
        });
        m.nohz_idle_balance_pass(c0, NohzFlags::STATS, &*p);
        enter.join().unwrap();
        gc.join().unwrap();

        check_s1(&m, c1);
        let visited = p.events().contains(&Event::RqClock { by: c0, cpu: c1 });
        assert!(
            visited || m.nohz().has_blocked_load(),
            "O1 (sharded): scan missed CPU 1 and nohz.has_blocked_load ended 0"
        );
        cases.hit(L4_CASES[usize::from(!visited)]);
    })
}

/// L5 `two_enter_gc_ilb` outcomes.
pub const L5_CASES: &[&str] = &["the pass visited both", "the pass missed one or both"];

/// L5: two enterers in one shard (CPUs 1 and 2, shard 1, stale from before), a GC (CPU 3's
/// `find_new_ilb`) and an ILB (main = CPU 0, a STATS pass): four threads.
pub fn two_enter_gc_ilb() -> crate::Explored {
    crate::model_cases(L5_CASES, |cases| {
        let (m, p, nr) = World::<One<4>, 4>::shared();
        m.set_shard_map(|c| [0, 1, 1, 2][c.index()]).unwrap();
        let [c0, c1, c2, c3] = [0, 1, 2, 3].map(|i| nr.cpu(i).unwrap());
        m.nohz_balance_enter_idle(c1, &*p);
        m.nohz_balance_exit_idle(c1, &*p);
        set_busy(m.rq(c3), 2);
        m.housekeeping().clear(c0);

        let spawn_enter = |c| {
            let (m1, p1) = (m.clone(), p.clone());
            thread::spawn(move || m1.nohz_balance_enter_idle(c, &*p1))
        };
        let (e1, e2) = (spawn_enter(c1), spawn_enter(c2));
        let m3 = m.clone();
        let gc = thread::spawn(move || {
            m3.find_new_ilb(c3);
        });
        m.nohz_idle_balance_pass(c0, NohzFlags::STATS, &*p);
        e1.join().unwrap();
        e2.join().unwrap();
        gc.join().unwrap();

        check_s1(&m, c1);
        check_s1(&m, c2);
        let events = p.events();
        let both = [c1, c2]
            .iter()
            .all(|&c| events.contains(&Event::RqClock { by: c0, cpu: c }));
        assert!(
            both || m.nohz().has_blocked_load(),
            "O1 (sharded): scan missed an enterer and nohz.has_blocked_load ended 0"
        );
        cases.hit(L5_CASES[usize::from(!both)]);
    })
}

/// L6 `churn_sticky` outcomes.
pub const L6_CASES: &[&str] = &["the GC found a CPU", "the GC found the shard empty"];

/// L6 (S1 under churn, the ABA the exact scheme loses): CPUs 1 and 2 share shard 1; one
/// thread = CPU 1 entering then leaving, one thread = CPU 2 entering, main = CPU 0's GC.
pub fn churn_sticky() -> crate::Explored {
    crate::model_cases(L6_CASES, |cases| {
        let (m, p, nr) = World::<One<3>, 3>::shared();
        m.set_shard_map(|c| usize::from(c.index() != 0)).unwrap();
        let [c0, c1, c2] = [0, 1, 2].map(|i| nr.cpu(i).unwrap());
        // Shard 1 stale before the race.
        m.nohz_balance_enter_idle(c2, &*p);
        m.nohz_balance_exit_idle(c2, &*p);
        set_busy(m.rq(c0), 2);

        let (m1, p1) = (m.clone(), p.clone());
        let x = thread::spawn(move || {
            m1.nohz_balance_enter_idle(c1, &*p1);
            set_busy(m1.rq(c1), 1);
            m1.nohz_balance_exit_idle(c1, &*p1);
        });
        let (m2, p2) = (m.clone(), p.clone());
        let y = thread::spawn(move || m2.nohz_balance_enter_idle(c2, &*p2));
        let found = m.find_new_ilb(c0);
        x.join().unwrap();
        y.join().unwrap();

        check_s1(&m, c2);
        assert!(!m.nohz_idle_test(c1), "CPU 1 left");
        cases.hit(L6_CASES[usize::from(found.is_none())]);
    })
}

/// L8 `owner_bits` outcomes.
pub const L8_CASES: &[&str] = &["CPU 0 left first", "CPU 1 registered first"];

/// L8: the shard word is shared by its CPUs, so each updates its own bit with an RMW: main =
/// CPU 0 leaving, one thread = CPU 1 registering, both in shard 0. After both: exactly CPU 1's
/// bit.
pub fn owner_bits() -> crate::Explored {
    crate::model_cases(L8_CASES, |cases| {
        let (m, p, nr) = World::<Sharded<1, Contiguous<2>, LowestId>, 2>::shared();
        let (c0, c1) = (nr.cpu(0).unwrap(), nr.cpu(1).unwrap());
        m.nohz_balance_enter_idle(c0, &*p);
        set_busy(m.rq(c0), 1);

        let (m1, p1) = (m.clone(), p.clone());
        let t = thread::spawn(move || m1.nohz_balance_enter_idle(c1, &*p1));
        m.nohz_balance_exit_idle(c0, &*p);
        let saw_one = m.nohz_idle_test(c1);
        t.join().unwrap();

        assert!(
            m.nohz_idle_test(c1) && !m.nohz_idle_test(c0),
            "owner bits: shard word {:#b} after CPU 0 left and CPU 1 registered",
            m.shard_word(0)
        );
        set_idle(m.rq(c0));
        cases.hit(L8_CASES[usize::from(saw_one)]);
    })
}

/// L7's variants of the *rejected* exact summary (set on a shard's 0 -> 1, cleared on 1 -> 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exact {
    /// The clear does not re-check the shard: loses a set (ABA).
    NoRecheck,
    /// Clear, then a fence and a re-check on the exit side only.
    ExitFenceOnly,
    /// Fences on both sides (after the enter's word RMW, after the exit's summary clear).
    BothFences,
    /// No fences; the set is a Release RMW and the clear an Acquire RMW on the summary.
    ReleaseAcquire,
}

/// L7 outcomes.
pub const L7_CASES: &[&str] = &["X's clear came first", "Y's set came first"];

/// L7 `exact_aba` (documents the rejection, plain loom atomics): thread X enters then leaves a
/// shard, thread Y enters it; with the exact scheme a shard's summary bit follows its
/// emptiness. After both: Y is registered, so the bit must be set.
pub fn exact_aba(variant: Exact) -> crate::Explored {
    crate::model_cases(L7_CASES, move |cases| {
        let word = std::sync::Arc::new(AtomicU64::new(0));
        let summary = std::sync::Arc::new(AtomicU64::new(0));
        let (rel, acq) = match variant {
            Exact::ReleaseAcquire => (Ordering::Release, Ordering::Acquire),
            _ => (Ordering::Relaxed, Ordering::Relaxed),
        };
        let enter = move |word: &AtomicU64, summary: &AtomicU64, bit: u64| {
            let was = word.fetch_or(bit, Ordering::Relaxed);
            if variant == Exact::BothFences {
                fence(Ordering::SeqCst);
            }
            if was == 0 {
                summary.fetch_or(1, rel);
            }
        };
        let (w1, s1) = (word.clone(), summary.clone());
        let x = thread::spawn(move || {
            enter(&w1, &s1, 1);
            if w1.fetch_and(!1, Ordering::Relaxed) == 1 {
                s1.fetch_and(!1, acq);
                if variant != Exact::NoRecheck {
                    if matches!(variant, Exact::ExitFenceOnly | Exact::BothFences) {
                        fence(Ordering::SeqCst);
                    }
                    if w1.load(Ordering::Relaxed) != 0 {
                        s1.fetch_or(1, rel);
                    }
                }
                1
            } else {
                0
            }
        });
        enter(&word, &summary, 2);
        let cleared = x.join().unwrap();
        assert!(
            summary.load(Ordering::Relaxed) & 1 != 0,
            "exact summary: Y is registered but the shard's bit ended clear ({variant:?})"
        );
        cases.hit(L7_CASES[usize::from(cleared == 0)]);
    })
}
