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

/// The outcomes [`deactivate_against_own_tick`] must reach.
pub const TICK_CASES: &[&str] = &[
    "CPU 2's tick came while it was still active",
    "CPU 2's tick came after it went inactive",
];

/// Main = CPU 2's hotplug thread running `sched_cpu_deactivate` (process context, interrupts
/// on); spawned = CPU 2's own tick, which interrupts it: the first busy tick after idle, whose
/// `nohz_balancer_kick` calls `nohz_balance_exit_idle` too. CPU 2 was registered idle before
/// its hotplug thread woke. The two threads stand for one CPU and its interrupt, so loom's
/// interleavings are a superset of the real ones (the tick runs whole, between two of the
/// hotplug thread's instructions). Exactly one of the two exits takes CPU 2 out: the mask bit
/// is clear and, under `Legacy`, `nohz.nr_cpus` went down once, not twice (a second
/// decrement leaves the counter one short, and once CPU 2 is back and idle every busy tick
/// reads "nobody tickless" with CPU 2 in the mask).
pub fn deactivate_against_own_tick<P: Policy>() -> crate::Explored {
    crate::model_cases(TICK_CASES, move |cases| {
        let (m, p, nr) = World::<P, 3>::shared();
        let [c0, c1, c2] = [0, 1, 2].map(|i| nr.cpu(i).unwrap());
        set_busy(m.rq(c0), 2);
        set_busy(m.rq(c1), 1);
        // CPU 1 idle and registered too, so that the counter has something to be off from.
        set_idle(m.rq(c1));
        m.nohz_balance_enter_idle(c1, &*p);
        m.nohz_balance_enter_idle(c2, &*p);
        // CPU 2's hotplug thread is running: CPU 2 is busy, still registered.
        set_busy(m.rq(c2), 1);

        let tick = {
            let (m, p) = (m.clone(), p.clone());
            thread::spawn(move || {
                let active = m.cpu_active(c2);
                m.nohz_balancer_kick(c2, &*p);
                active
            })
        };
        m.sched_cpu_deactivate(c2, &*p).unwrap();
        let active_at_tick = tick.join().unwrap();
        assert!(
            !m.nohz_idle_test(c2),
            "hotplug: CPU 2 is in the idle mask after its deactivation and its tick"
        );
        assert!(m.nohz_idle_test(c1), "hotplug: CPU 1 left the idle mask");
        if P::NR_CPUS_COUNTER {
            assert_eq!(
                m.nohz().nr_cpus(),
                1,
                "hotplug: nohz.nr_cpus counts CPU 1 alone after CPU 2's deactivation and tick"
            );
        }
        cases.hit(TICK_CASES[usize::from(!active_at_tick)]);
    })
}
