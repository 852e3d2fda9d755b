//! O5 (spec §6, tolerated staleness) on the kick path: `nohz_balance_enter_idle` on one CPU and
//! `nohz_balance_exit_idle` on another, against a busy CPU's tick (`sched_tick` ->
//! `nohz_balancer_kick` -> `kick_ilb` -> `find_new_ilb`).
//!
//! The mask bit, the LLC busy counts and every read the kick makes are `Relaxed`: the kernel
//! puts no barrier there and tolerates a late or an extra kick. What must still hold:
//!
//! - **no missed idle CPU once its registration is known:** a kicker that starts after
//!   observing (through a model-only flag, with Acquire) that `nohz_balance_enter_idle` returned on an idle
//!   CPU picks that CPU (it is the lowest candidate);
//! - **nothing worse than an extra kick otherwise:** every other outcome is one a sequential
//!   run of the three operations also produces, except a kick to the CPU that is leaving,
//!   whose handler then finds it busy (`idle_cpu()` false) and starts no balance;
//! - the mask and the LLC busy count end exact (no RMW lost).

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::thread;
use nohz::Policy;
use nohz::{KickDecision, KickOutcome};
use nohz_testing::{Event, World, set_busy};

/// The outcomes the race must reach.
pub const CASES: &[&str] = &[
    "the kicker knew of the entry and picked CPU 1",
    "the kicker picked CPU 1 without knowing",
    "an extra kick to the leaving CPU 2",
    "no idle CPU found yet",
];

/// Main = busy CPU 0 (two tasks) taking its tick; spawned CPU 1 (idle) runs `nohz_balance_enter_idle` then
/// sets the model's "entered" flag with Release; spawned CPU 2, registered idle at the start,
/// gets a task and leaves with `nohz_balance_exit_idle` (what its first busy tick does). The kicker loads
/// the flag with `observe` before its tick: `Acquire` is the model; `Relaxed` shows that the
/// observation alone proves nothing (that variant fails).
pub fn enter_exit_against_kick<P: Policy>(observe: Ordering) -> crate::Explored {
    crate::model_cases(CASES, move |cases| {
        let (m, p, nr) = World::<P, 3>::shared();
        let [kicker, entering, leaving] = [0, 1, 2].map(|i| nr.cpu(i).unwrap());
        set_busy(m.rq(kicker), 2);
        m.nohz_balance_enter_idle(leaving, &*p);
        let entered = Arc::new(AtomicBool::new(false));

        let enter = {
            let (m, p, entered) = (m.clone(), p.clone(), entered.clone());
            thread::spawn(move || {
                m.nohz_balance_enter_idle(entering, &*p);
                entered.store(true, Ordering::Release);
            })
        };
        let leave = {
            let (m, p) = (m.clone(), p.clone());
            thread::spawn(move || {
                set_busy(m.rq(leaving), 1);
                m.nohz_balance_exit_idle(leaving, &*p);
            })
        };
        let saw_entry = entered.load(observe);
        let decision = m.sched_tick(kicker, &*p);
        enter.join().unwrap();
        leave.join().unwrap();

        let target = match decision {
            Some(KickDecision::Kick {
                outcome: KickOutcome::Sent(t),
                ..
            }) => Some(t),
            Some(
                KickDecision::Kick {
                    outcome: KickOutcome::NoIlb,
                    ..
                }
                | KickDecision::EmptyMask
                | KickDecision::NobodyTickless,
            ) => None,
            other => panic!("O5: a decision no sequential run makes: {other:?}"),
        };
        if saw_entry {
            assert_eq!(
                target,
                Some(entering),
                "O5: the kicker saw CPU 1's nohz_balance_enter_idle return, yet did not pick CPU 1"
            );
        }
        // The kicked CPU's handler, after the fact: it balances only if still idle.
        if let Some(t) = target {
            let before = p.events().len();
            m.nohz_csd_ipi(t, &*p);
            let raised = p.events()[before..].contains(&Event::Softirq { cpu: t });
            if t == entering {
                assert!(raised, "O5: the idle CPU 1 was kicked but did not balance");
            } else {
                assert_eq!(t, leaving, "O5: kicked a CPU that was never idle");
                assert!(
                    !raised && m.rq(t).nohz_idle_balance().is_empty(),
                    "O5: the extra kick to the leaving CPU 2 started a balance there"
                );
            }
        }
        let mask: Vec<usize> = m.nohz_idle_cpus().map(|c| c.index()).collect();
        assert_eq!(mask, [1], "O5: the idle mask lost an update");
        assert_eq!(
            m.llc_nr_busy_cpus(kicker),
            Some(2),
            "O5: the LLC busy count lost an update"
        );
        assert_eq!(m.warnings().total(nr), 0);
        cases.hit(match target {
            Some(t) if t == entering && saw_entry => CASES[0],
            Some(t) if t == entering => CASES[1],
            Some(_) => CASES[2],
            None => CASES[3],
        });
    })
}
