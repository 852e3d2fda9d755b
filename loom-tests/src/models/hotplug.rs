//! Hotplug (spec §5.3, §5.6): `sched_cpu_deactivate` on CPU 2 against CPU 2's own idle loop,
//! which runs while the hotplug thread sleeps in `synchronize_rcu`, and against busy CPU 0's
//! kicks.
//!
//! What must hold once `sched_cpu_deactivate` returned:
//!
//! - **CPU 2 is not in the idle mask**, and stays out: its idle entry during the grace period
//!   found it inactive (the crate clears the active bit before it waits);
//! - **no kick is sent to CPU 2**: every kicker that could still see CPU 2 in the mask was
//!   inside an RCU read-side section (IRQs off) that the grace period waited for;
//! - a kick sent before is flushed by the dying CPU: afterwards no kick bit and no busy csd.
//!
//! Everything the crate does here is `Relaxed`. The grace period's ordering is the platform's:
//! this model implements `synchronize_rcu` the way the spec requires of an embedding (a reader
//! flag per kicking CPU, SeqCst fences on both sides, the writer waiting for readers it sees),
//! and the idle loop of the dying CPU runs inside that wait, on the hotplug thread, because
//! on one CPU the two run one after the other. A platform whose grace period does not wait for
//! the kicker fails the model (the expected failure in the test file).

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, Ordering, fence};
use loom::thread;
use nohz::{KickDecision, KickOutcome};
use nohz::{NohzFlags, Policy};
use nohz_testing::{World, set_busy, set_idle};

/// The outcomes the race must reach.
pub const CASES: &[&str] = &[
    "a tick kicked CPU 2 before it went inactive; the dying CPU flushed it",
    "a tick found no idle CPU",
];

/// How the model's platform implements the grace period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GracePeriod {
    /// Waits for the kicker's read-side section, as `synchronize_rcu` must.
    WaitsForReaders,
    /// Returns at once (a broken platform): the model must fail.
    ReturnsAtOnce,
}

/// Main = CPU 2's hotplug thread running `sched_cpu_deactivate` (its `synchronize_rcu` lets CPU 2's
/// idle loop run `tick`-stopped idle entry, then waits for readers), then `cpu_dying`; spawned
/// CPU 0, busy with two tasks, takes two ticks, each inside a model RCU read-side section. CPU
/// 2 was registered idle before its hotplug thread woke. CPU 1 stays busy.
pub fn deactivate_against_idle_entry_and_kicks<P: Policy>(grace: GracePeriod) -> crate::Explored {
    crate::model_cases(CASES, move |cases| {
        let (m, p, nr) = World::<P, 3>::shared();
        let [c0, c1, c2] = [0, 1, 2].map(|i| nr.cpu(i).unwrap());
        set_busy(m.rq(c0), 2);
        set_busy(m.rq(c1), 1);
        m.nohz_balance_enter_idle(c2, &*p);
        // CPU 2's hotplug thread is running: CPU 2 is busy, still registered.
        set_busy(m.rq(c2), 1);

        // Model-only state: CPU 0's read-side flag, "deactivate returned".
        let reading = Arc::new(AtomicBool::new(false));
        let deactivated = Arc::new(AtomicBool::new(false));
        {
            let deactivated = deactivated.clone();
            p.on_ipi(move |_, to| {
                assert!(
                    !(to == c2 && deactivated.load(Ordering::Acquire)),
                    "hotplug: a kick sent to CPU 2 after its deactivation returned"
                );
            });
        }
        {
            // The hook holds the machine (which holds nothing of the platform's: no cycle).
            let (m, reading) = (m.clone(), reading.clone());
            p.on_synchronize_rcu(move |p| {
                // The hotplug thread sleeps: CPU 2 switches to its idle task, whose tick
                // stops, and idle entry runs.
                set_idle(m.rq(c2));
                m.nohz_balance_enter_idle(c2, p);
                if grace == GracePeriod::WaitsForReaders {
                    // The grace period: after this fence, a reader either is seen (and
                    // waited for) or sees every store made before it.
                    fence(Ordering::SeqCst);
                    while reading.load(Ordering::Acquire) {
                        thread::yield_now();
                    }
                }
            });
        }

        let kicker = {
            let (m, p, reading) = (m.clone(), p.clone(), reading.clone());
            thread::spawn(move || {
                let mut kicked = false;
                for _ in 0..2 {
                    // rcu_read_lock(): IRQs off for the tick.
                    reading.store(true, Ordering::Relaxed);
                    fence(Ordering::SeqCst);
                    let d = m.kick_ilb(c0, NohzFlags::STATS, &*p);
                    reading.store(false, Ordering::Release);
                    match d {
                        KickOutcome::Sent(t) => {
                            assert_eq!(t, c2);
                            kicked = true;
                        }
                        KickOutcome::NoIlb | KickOutcome::AlreadyPending(_) => {}
                        other => panic!("hotplug: a kick outcome no run makes: {other:?}"),
                    }
                }
                kicked
            })
        };

        m.sched_cpu_deactivate(c2, &*p).unwrap();
        deactivated.store(true, Ordering::Release);
        assert!(
            !m.nohz_idle_test(c2),
            "hotplug: CPU 2 is in the idle mask after its deactivation returned"
        );
        let kicked = kicker.join().unwrap();
        assert!(
            !m.nohz_idle_test(c2),
            "hotplug: CPU 2 registered again after its deactivation"
        );
        // The CPU dies: a kick still queued runs its handler now.
        m.cpu_dying(c2, &*p).unwrap();
        let rq = m.rq(c2);
        assert!(
            !rq.csd_busy() && rq.nohz_flags().load().is_empty(),
            "hotplug: a kick bit or a busy csd survived the CPU's death"
        );
        // Any tick from now on finds nobody.
        assert!(matches!(
            m.nohz_balancer_kick(c0, &*p),
            KickDecision::NoFlags
                | KickDecision::EmptyMask
                | KickDecision::NobodyTickless
                | KickDecision::Kick {
                    outcome: KickOutcome::NoIlb,
                    ..
                }
        ));
        cases.hit(CASES[usize::from(!kicked)]);
    })
}
