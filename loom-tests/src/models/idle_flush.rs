//! The elided kick IPI against the idle exit's flush: a kick to a CPU that polls in its idle
//! loop may have its IPI replaced by a `need_resched` (the kernel's `set_nr_if_polling`), and
//! the crate's `do_idle` must then run the queued csd on its way out
//! (`flush_smp_call_function_queue`), or the kick's bits sit behind a busy csd with no IPI
//! coming, and every later kick to that CPU rides along on it.
//!
//! The crate's own accesses here are Relaxed (`csd_lock`'s swap, the flush's `csd_busy` load):
//! what orders them is the platform's half of the contract in `Ipi::send_nohz_ipi`, which the
//! model plays: the CPU's thread flags in one word (POLLING, NEED_RESCHED), the elision a
//! compare-exchange that sets NEED_RESCHED only while POLLING is set, and a poll loop that
//! clears POLLING with a full barrier before it returns. Killed by: the kernel-step mutant
//! `IdleExitNoFlush` (no flush at the idle exit, a patch `ci/patch-mutants.py` applies), and
//! by either platform half made Relaxed ([`Contract::ClearRelaxed`], [`Contract::ElideRelaxed`]: the tests keep those as expected
//! failures, since they weaken the platform rather than the crate).

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicU32, Ordering, Ordering::Relaxed, Ordering::SeqCst};
use loom::thread;
use nohz::{IdleExit, KickOutcome, NohzFlags, Patched, Warning};
use nohz_testing::{World, set_idle};

/// The assertion message of a stranded kick; `#[should_panic(expected = ...)]` matches it.
pub const STRANDED: &str = "a kick stranded";

/// The outcomes the race must reach.
pub const CASES: &[&str] = &[
    "the IPI was elided and the idle exit's flush ran the kick",
    "the IPI was sent and a flush on its interrupt ran the kick",
];

/// `TIF_POLLING_NRFLAG`: the CPU polls and will notice `need_resched` without an IPI.
const POLLING: u32 = 1;
/// `TIF_NEED_RESCHED`.
const NEED_RESCHED: u32 = 2;

/// How the model's platform keeps its half of `Ipi::send_nohz_ipi`'s contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contract {
    /// As documented: the elision is a `SeqCst` compare-exchange after the kicker's csd
    /// lock, and the poll loop clears POLLING with a `SeqCst` RMW (a full barrier).
    Kept,
    /// The poll loop clears POLLING with a Relaxed RMW and no fence.
    ClearRelaxed,
    /// The elision's compare-exchange is Relaxed.
    ElideRelaxed,
}

/// Main = the kicking CPU 0 (`kick_ilb` with STATS); a spawned CPU 1, idle and registered,
/// runs `do_idle` in its polling idle state, then takes any IPI still to come until main says
/// it is done. The platform elides the IPI if CPU 1 is polling; a real IPI, in or after the
/// poll, runs `flush_smp_call_function_queue` as the kick interrupt's handler does. At the
/// end no kick bit may be left and the csd must be free.
pub fn elided_ipi_against_idle_exit(contract: Contract) -> crate::Explored {
    let (elide, clear): (Ordering, Ordering) = match contract {
        Contract::Kept => (SeqCst, SeqCst),
        Contract::ClearRelaxed => (SeqCst, Relaxed),
        Contract::ElideRelaxed => (Relaxed, SeqCst),
    };
    crate::model_cases(CASES, move |cases| {
        let (m, p, nr) = World::<Patched, 2>::shared();
        let [kicker, target] = [0, 1].map(|i| nr.cpu(i).unwrap());
        set_idle(m.rq(target));
        m.nohz_balance_enter_idle(target, &*p);
        p.set_idle_poll(true);

        // The target's thread flags, its IPI mailbox (a real IPI), and main's "done".
        let flags = Arc::new(AtomicU32::new(0));
        let mailbox = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let elided = Arc::new(AtomicBool::new(false));

        {
            // send_nohz_ipi: set_nr_if_polling, or a real IPI.
            let (flags, mailbox, elided) = (flags.clone(), mailbox.clone(), elided.clone());
            p.on_ipi(move |_, to| {
                assert_eq!(to, target);
                let mut old = flags.load(Relaxed);
                let woken = loop {
                    if old & POLLING == 0 {
                        break false;
                    }
                    match flags.compare_exchange(old, old | NEED_RESCHED, elide, Relaxed) {
                        Ok(_) => break true,
                        Err(now) => old = now,
                    }
                };
                if woken {
                    elided.store(true, Relaxed);
                } else {
                    mailbox.store(true, SeqCst);
                }
            });
        }
        {
            // poll_idle: poll with POLLING set until NEED_RESCHED (or main's end), taking a real
            // IPI as an interrupt; clear POLLING before returning.
            let (m, flags, mailbox, done) =
                (m.clone(), flags.clone(), mailbox.clone(), done.clone());
            p.on_idle_with(move |p, cpu| {
                flags.fetch_or(POLLING, SeqCst);
                loop {
                    if mailbox.swap(false, SeqCst) {
                        m.flush_smp_call_function_queue(cpu, p);
                    }
                    if flags.load(Relaxed) & NEED_RESCHED != 0 || done.load(SeqCst) {
                        p.set_need_resched(cpu, true);
                        break;
                    }
                    thread::yield_now();
                }
                flags.fetch_and(!POLLING, clear);
            });
        }

        let idle = {
            let (m, p, mailbox, done) = (m.clone(), p.clone(), mailbox.clone(), done.clone());
            thread::spawn(move || {
                assert_eq!(m.do_idle(target, &*p), IdleExit::Resched);
                // Interrupts still arrive after the idle loop.
                loop {
                    let finished = done.load(SeqCst);
                    if mailbox.swap(false, SeqCst) {
                        m.flush_smp_call_function_queue(target, &*p);
                    } else if finished {
                        break;
                    } else {
                        thread::yield_now();
                    }
                }
            })
        };
        let outcome = m.kick_ilb(kicker, NohzFlags::STATS, &*p);
        assert_eq!(
            outcome,
            KickOutcome::Sent(target),
            "the idle CPU 1 was kicked"
        );
        done.store(true, SeqCst);
        idle.join().unwrap();

        assert!(
            !m.rq(target)
                .nohz_flags()
                .load()
                .intersects(NohzFlags::KICK_MASK)
                && !m.rq(target).csd_busy(),
            "{STRANDED}: its bits are still pending behind a busy csd (elided IPI: {})",
            elided.load(Relaxed)
        );
        assert_eq!(m.warnings().of_kind(Warning::CsdWithoutKick), 0);
        cases.hit(CASES[usize::from(!elided.load(Relaxed))]);
    })
}
