//! O8 (spec §6, §5.7): NEWILB, the local blocked-load request, against remote kicks to the
//! same CPU and that CPU's csd handler.
//!
//! The target CPU runs `sched_balance_newidle` (which sets NEWILB with a Relaxed RMW), then
//! `nohz_run_idle_balance` (which consumes NEWILB with an RMW and runs a STATS pass only if
//! NEWILB was the only bit), then serves its IPIs (`nohz_csd_ipi` and the softirq). Two busy
//! CPUs kick it meanwhile (`kick_ilb`, STATS and NEXT). What must hold:
//!
//! - **no kick bit lost**: every kicker's bit reaches a handler, none is left, and the
//!   consumption of NEWILB by `nohz_run_idle_balance` never takes a kick bit;
//! - **NEWILB never owns the csd**: a kicker that finds only NEWILB set still owns the csd and
//!   sends the IPI (one IPI in flight at most, one per owner), and NEWILB alone sends none;
//! - **the STATS pass runs at most as the spec says**: `nohz_run_idle_balance` runs it only
//!   when no kick was pending at its RMW (a kick known to have returned before rules it out;
//!   NEWILB known to be alone when both kickers start requires it), and every handler run that
//!   consumed kick bits runs exactly one pass from the softirq.

use loom::sync::Arc;
use loom::sync::atomic::Ordering::SeqCst;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Acquire, Ordering::Release};
use loom::thread;
use nohz::KickOutcome;
use nohz::{NohzFlags, Policy, Warning};
use nohz_testing::{Event, HostPlatform, World, set_busy};

/// The outcomes the race must reach.
pub const CASES: &[&str] = &[
    "NEWILB alone: nohz_run_idle_balance ran its STATS pass",
    "a kick pending: no NEWILB pass",
    "a kick known to have returned before nohz_run_idle_balance",
    "both kickers knew NEWILB was consumed alone",
    "one IPI carried both bits",
    "two IPIs",
];

/// Kicker `k`'s bit.
const BITS: [NohzFlags; 2] = [NohzFlags::STATS, NohzFlags::NEXT];

/// Main = busy kicker CPU 0 (STATS), spawned busy kicker CPU 1 (NEXT), spawned target CPU 2:
/// registered idle at the start, with a long expected idle (`avg_idle`); it runs newidle, then
/// `nohz_run_idle_balance`, then sleeps in `park()` and serves each IPI (`unpark`) with
/// `nohz_csd_ipi` and `sched_balance_softirq`. Model-only flags (Release/Acquire) record "a kick
/// returned" and "nohz_run_idle_balance returned".
pub fn newilb_against_kicks<P: Policy>() -> crate::Explored {
    crate::model_cases(CASES, |cases| {
        let (m, p, nr) = World::<P, 3>::shared();
        let [k0, k1, target] = [0, 1, 2].map(|i| nr.cpu(i).unwrap());
        set_busy(m.rq(k0), 1);
        set_busy(m.rq(k1), 1);
        m.nohz_balance_enter_idle(target, &*p);
        m.rq(target).set_avg_idle(u64::MAX);

        // Model-only state: kicks returned, NEWILB consumed, the IPI mailbox, the end signal.
        let kicks_returned = Arc::new(AtomicUsize::new(0));
        let newilb_done = Arc::new(AtomicBool::new(false));
        let pending = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));

        let cpu2 = {
            let (m, p) = (m.clone(), p.clone());
            let (kicks_returned, newilb_done) = (kicks_returned.clone(), newilb_done.clone());
            let (pending, done) = (pending.clone(), done.clone());
            thread::spawn(move || {
                assert!(!m.sched_balance_newidle(target, &*p), "nothing to pull");
                assert!(
                    m.rq(target).nohz_flags().load().contains(NohzFlags::NEWILB),
                    "O8: newidle did not ask for the STATS pass"
                );
                let kick_known = kicks_returned.load(Acquire) > 0;
                let newilb_pass = m.nohz_run_idle_balance(target, &*p);
                newilb_done.store(true, Release);
                assert!(
                    !(kick_known && newilb_pass.is_some()),
                    "O8: nohz_run_idle_balance ran its STATS pass with a kick pending"
                );
                let (mut consumed, mut handled) = (NohzFlags::empty(), 0);
                loop {
                    let finished = done.load(SeqCst);
                    if pending.swap(false, SeqCst) {
                        m.nohz_csd_ipi(target, &*p);
                        let got = m.rq(target).nohz_idle_balance();
                        assert!(
                            got.intersects(NohzFlags::KICK_MASK),
                            "O8: an IPI whose handler found no kick bit"
                        );
                        assert!(
                            (consumed & got).is_empty(),
                            "O8: a kick bit delivered twice"
                        );
                        consumed |= got & NohzFlags::KICK_MASK;
                        handled += 1;
                        m.sched_balance_softirq(target, &*p);
                    } else if finished {
                        break;
                    } else {
                        thread::park();
                    }
                }
                (newilb_pass.is_some(), kick_known, consumed, handled)
            })
        };
        let wake = cpu2.thread().clone();
        {
            let pending = pending.clone();
            p.on_ipi(move |_, to| {
                assert_eq!(to, target);
                assert!(
                    !pending.swap(true, SeqCst),
                    "O8: a second IPI while one is in flight"
                );
                wake.unpark();
            });
        }

        let kick = move |k: usize, m: &nohz::machine!(P, 3), p: &HostPlatform<3>| {
            let newilb_known_alone = newilb_done.load(Acquire);
            let outcome = m.kick_ilb(nr.cpu(k).unwrap(), BITS[k], p);
            kicks_returned.fetch_add(1, Release);
            (outcome, newilb_known_alone)
        };
        let other = {
            let (m, p, kick) = (m.clone(), p.clone(), kick.clone());
            thread::spawn(move || kick(1, &m, &p))
        };
        let mine = kick(0, &m, &p);
        let theirs = other.join().unwrap();
        done.store(true, SeqCst);
        cpu2.thread().unpark();
        let (newilb_pass, kick_known, consumed, handled) = cpu2.join().unwrap();

        for (outcome, _) in [mine, theirs] {
            assert!(
                matches!(outcome, KickOutcome::Sent(t) | KickOutcome::RodeAlong(t) if t == target),
                "O8: a kick ended {outcome:?}"
            );
        }
        let sent = [mine.0, theirs.0]
            .iter()
            .filter(|o| matches!(o, KickOutcome::Sent(_)))
            .count();
        assert!(sent >= 1, "O8: nobody owned the csd");
        assert_eq!(p.ipis().len(), sent, "O8: an IPI nobody owned");
        assert_eq!(handled, sent);
        assert_eq!(consumed, BITS[0] | BITS[1], "O8: a kick bit was lost");
        assert!(
            m.rq(target).nohz_flags().load().is_empty(),
            "O8: a bit left behind in nohz_flags"
        );
        assert!(!m.rq(target).csd_busy());
        if mine.1 && theirs.1 {
            assert!(newilb_pass, "O8: NEWILB was alone, yet no STATS pass ran");
        }
        // Each pass visits CPU 2 itself (the only CPU in the mask) exactly once.
        let passes = p
            .events()
            .iter()
            .filter(|e| {
                **e == Event::RqClock {
                    by: target,
                    cpu: target,
                }
            })
            .count();
        assert_eq!(
            passes,
            handled + usize::from(newilb_pass),
            "O8: a STATS pass ran more often than the spec allows"
        );
        assert_eq!(m.warnings().of_kind(Warning::CsdBusy), 0);
        assert_eq!(m.warnings().of_kind(Warning::CsdWithoutKick), 0);
        assert_eq!(m.warnings().total(nr), 0);
        cases.hit(CASES[usize::from(!newilb_pass)]);
        if kick_known {
            cases.hit(CASES[2]);
        }
        if mine.1 && theirs.1 {
            cases.hit(CASES[3]);
        }
        cases.hit(CASES[3 + sent]);
    })
}
