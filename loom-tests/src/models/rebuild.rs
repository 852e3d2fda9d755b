//! Domain rebuild (spec §5.6): `rebuild_sched_domains`, twice, against CPU 1 leaving idle
//! (`nohz_balance_exit_idle` -> `set_cpu_sd_state_busy`) and CPU 2 entering it
//! (`nohz_balance_enter_idle` -> `set_cpu_sd_state_idle`).
//!
//! The kernel publishes new domains through RCU: a CPU's check-then-act on `nohz_idle` and
//! its RMW on `nr_busy_cpus` land wholly in the old domain or wholly in the new one. The crate
//! keeps two copies of that state and a generation word; a rebuild waits for a grace period,
//! fills the copy nobody uses, and publishes it (Release; readers Acquire). What must hold
//! after both rebuilds and both transitions: in the current generation, the LLC's busy count
//! equals the number of its CPUs not marked `nohz_idle` (never counted twice, never left
//! low), and it stays so through further entries and exits.
//!
//! The grace period is the platform's (as in the hotplug model: reader flags with SeqCst
//! fences, the writer waiting for readers it sees). A platform whose grace period does not wait
//! lets CPU 1 finish its RMW on a copy that the second rebuild has just rebuilt: the count
//! ends one too high (the expected failure).

use super::hotplug::GracePeriod;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, Ordering, fence};
use loom::thread;
use nohz::Policy;
use nohz_testing::{World, set_busy, set_idle};

/// The outcomes the race must reach.
pub const CASES: &[&str] = &[
    "CPU 1 left idle in the first generation",
    "CPU 1 left idle in a rebuilt generation",
];

/// A model RCU read-side section: the flag, then a SeqCst fence (pairs with the grace
/// period's), the body, then the flag cleared with Release.
fn read_side<T>(flag: &AtomicBool, body: impl FnOnce() -> T) -> T {
    flag.store(true, Ordering::Relaxed);
    fence(Ordering::SeqCst);
    let r = body();
    flag.store(false, Ordering::Release);
    r
}

/// Main = the hotplug / cpuset thread rebuilding the domains twice; spawned CPU 1 (registered
/// idle at the start, counted idle in the first generation) gets a task and leaves idle;
/// spawned CPU 2 goes idle and registers. One LLC of CPUs 0..3; CPU 0 stays busy.
pub fn rebuild_against_enter_exit<P: Policy>(grace: GracePeriod) -> crate::Explored {
    crate::model_cases(CASES, move |cases| {
        let (m, p, nr) = World::<P, 3>::shared();
        let [c0, c1, c2] = [0, 1, 2].map(|i| nr.cpu(i).unwrap());
        set_busy(m.rq(c0), 1);
        set_busy(m.rq(c2), 1);
        m.nohz_balance_enter_idle(c1, &*p);
        assert_eq!(m.llc_nr_busy_cpus(c0), Some(2));

        let readers = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
        {
            let readers = readers.clone();
            p.on_synchronize_rcu(move |_| {
                if grace == GracePeriod::WaitsForReaders {
                    fence(Ordering::SeqCst);
                    for r in readers.iter() {
                        while r.load(Ordering::Acquire) {
                            thread::yield_now();
                        }
                    }
                }
            });
        }

        let leave = {
            let (m, p, readers) = (m.clone(), p.clone(), readers.clone());
            thread::spawn(move || {
                set_busy(m.rq(c1), 1);
                read_side(&readers[0], || {
                    // What it saw: the LLC count of the generation it worked in, before.
                    let before = m.llc_nr_busy_cpus(c1);
                    m.nohz_balance_exit_idle(c1, &*p);
                    before
                })
            })
        };
        let enter = {
            let (m, p, readers) = (m.clone(), p.clone(), readers.clone());
            thread::spawn(move || {
                set_idle(m.rq(c2));
                read_side(&readers[1], || m.nohz_balance_enter_idle(c2, &*p));
            })
        };
        m.rebuild_sched_domains(&*p).unwrap();
        m.rebuild_sched_domains(&*p).unwrap();
        let seen = leave.join().unwrap();
        enter.join().unwrap();

        let consistent = |when: &str| {
            let idle = [c0, c1, c2].iter().filter(|&&c| m.nohz_idle(c)).count() as i32;
            assert_eq!(
                m.llc_nr_busy_cpus(c0),
                Some(3 - idle),
                "rebuild: the LLC busy count disagrees with its CPUs' nohz_idle {when}"
            );
        };
        consistent("after the race");
        // And it stays right: CPU 2 leaves, CPU 1 registers again, CPU 2 again.
        set_busy(m.rq(c2), 1);
        m.nohz_balance_exit_idle(c2, &*p);
        set_idle(m.rq(c1));
        m.nohz_balance_enter_idle(c1, &*p);
        consistent("after later exits and entries");
        cases.hit(CASES[usize::from(seen != Some(2))]);
    })
}
