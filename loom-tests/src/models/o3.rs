//! O3 (spec §6): csd ownership through `nohz_flags`. Two kickers (`kick_ilb`) against the
//! target's csd entry point and `nohz_csd_func`, with the IPI as park/unpark.
//!
//! Checked: exactly one IPI in flight; every kick bit a kicker's `fetch_or` set is consumed by
//! a handler and none is left at the end; the handler that consumes a kicker's bit sees the
//! write the kicker made before its `fetch_or`; a kick after a handler ran sends again. Killed
//! by: either RMW (`NOHZ_KICK_FETCH_OR`, `NOHZ_CSD_FETCH_ANDNOT`) made Relaxed, the kicker's
//! made Acquire or the handler's Release (the data half lost).

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};
use loom::thread;
use nohz::KickOutcome;
use nohz::{NohzFlags, Patched, Warning};
use nohz_testing::{HostPlatform, World};

type M = nohz::machine!(Patched, 3);
type P = HostPlatform<3>;

/// The outcomes the race must reach.
pub const CASES: &[&str] = &[
    "one IPI carried both bits (a kick rode along)",
    "two IPIs (a kick after the handler ran sent again)",
];

/// Kicker `k`'s bit.
const BITS: [NohzFlags; 2] = [NohzFlags::STATS, NohzFlags::NEXT];

/// Main = kicker CPU 0, a spawned kicker CPU 1, a spawned target CPU 2 that sleeps in
/// `park()` until its IPI (`unpark`) and then runs `nohz_csd_ipi`. Each kicker writes its own
/// datum (Relaxed) before its kick; the handler asserts it sees the datum of every bit it
/// consumed.
pub fn kick_ownership() -> crate::Explored {
    crate::model_cases(CASES, |cases| {
        let (m, p, nr) = World::<Patched, 3>::shared();
        let target = nr.cpu(2).unwrap();
        m.nohz_balance_enter_idle(target, &*p);

        // Each kicker's datum, written before its kick.
        let data = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
        // Test harness state (not the crate's): IPI mailbox and end-of-test signal.
        let pending = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let consumed = Arc::new(AtomicUsize::new(0));

        let handler = {
            let (m, p, data, pending, done, consumed) = (
                m.clone(),
                p.clone(),
                data.clone(),
                pending.clone(),
                done.clone(),
                consumed.clone(),
            );
            thread::spawn(move || {
                let handle = || {
                    m.nohz_csd_ipi(target, &*p);
                    let got = m.rq(target).nohz_idle_balance();
                    for (k, bit) in BITS.iter().enumerate() {
                        if got.contains(*bit) {
                            assert_eq!(
                                data[k].load(Relaxed),
                                1,
                                "O3: handler consumed kicker {k}'s bit without its data"
                            );
                            let before = consumed.fetch_or(1 << k, Relaxed);
                            assert_eq!(before & (1 << k), 0, "O3: bit delivered twice");
                        }
                    }
                };
                loop {
                    let finished = done.load(SeqCst);
                    if pending.swap(false, SeqCst) {
                        handle();
                    } else if finished {
                        break;
                    } else {
                        thread::park();
                    }
                }
            })
        };
        let wake = handler.thread().clone();
        {
            let pending = pending.clone();
            p.on_ipi(move |_, to| {
                assert_eq!(to, target);
                assert!(
                    !pending.swap(true, SeqCst),
                    "O3: a second IPI while one is in flight"
                );
                wake.unpark();
            });
        }

        let kicker = move |k: usize, m: &M, p: &P, data: &[AtomicUsize; 2]| {
            data[k].store(1, Relaxed);
            m.kick_ilb(nr.cpu(k).unwrap(), BITS[k], p)
        };
        let other = {
            let (m, p, data) = (m.clone(), p.clone(), data.clone());
            thread::spawn(move || kicker(1, &m, &p, &data))
        };
        let mine = kicker(0, &m, &p, &data);
        let theirs = other.join().unwrap();
        done.store(true, SeqCst);
        handler.thread().unpark();
        handler.join().unwrap();

        let sent = [mine, theirs]
            .iter()
            .filter(|o| matches!(o, KickOutcome::Sent(_)))
            .count();
        assert!(sent >= 1, "O3: nobody owned the csd");
        assert_eq!(p.ipis().len(), sent);
        assert_eq!(consumed.load(Relaxed), 0b11, "O3: a kick bit was lost");
        assert!(
            !m.rq(target)
                .nohz_flags()
                .load()
                .intersects(NohzFlags::KICK_MASK),
            "O3: a kick bit left behind"
        );
        assert!(!m.rq(target).csd_busy());
        assert_eq!(m.warnings().of_kind(Warning::CsdBusy), 0);
        cases.hit(CASES[sent - 1]);
    })
}
