//! The `sched_clock_irqtime` static key (spec §8, seed 003) flipped while another CPU runs
//! `irqtime_account_irq`.
//!
//! The key is read once per call with one `Relaxed` load and gives no ordering of other data
//! (spec §8.1). So:
//!
//! - **each call is all or nothing**: whatever the flip's timing, the accounting CPU's record is
//!   exactly what a sequential replay produces in which a prefix of its calls (disable) or a
//!   suffix (enable) accounted: never half a call (torn state), never a call that accounted
//!   after a later one did not ([`flip_against_accounting`]);
//! - **"after disable returned, nobody still accounts" does not follow from the key**: a call
//!   that read the key before the flip may still be writing after `disable` returned. Code
//!   that relies on it needs an explicit quiescence handshake, as the kernel's text patching
//!   waits for every CPU; [`disable_then_rely_on_quiescence`] fails without one and passes
//!   with one.

use loom::sync::{Arc, Mutex};
use loom::thread;
use nohz::Policy;
use nohz::{IrqContext, IrqTime};
use nohz_testing::{TestSleepable, World};

/// The assertion message when irq time was accounted after `disable` returned;
/// `#[should_panic(expected = ...)]` tests match on it.
pub const ACCOUNTED_AFTER_DISABLE: &str =
    "irq time accounted after disable_sched_clock_irqtime returned";

/// The accounting CPU's calls: a hardirq entry (task time ends), its exit (30 ns of hardirq),
/// then the end of a softirq batch (40 ns of softirq).
const CALLS: [(IrqContext, u64); 3] = [
    (IrqContext::Task, 100),
    (IrqContext::Hardirq, 130),
    (
        IrqContext::Softirq {
            in_ksoftirqd: false,
        },
        170,
    ),
];

/// The outcomes the race must reach: how many of the three calls accounted (flip), or had
/// accounted when the snapshot was taken (quiescence).
pub const CASES: &[&str] = &[
    "0 calls accounted",
    "1 call accounted",
    "2 calls accounted",
    "3 calls accounted",
];

/// One CPU's irqtime record: `(irq_start_time, hardirq, softirq, total, tick_delta)`.
pub type Record = (u64, u64, u64, u64, u64);

fn record(t: &IrqTime) -> Record {
    (
        t.irq_start_time(),
        t.hardirq(),
        t.softirq(),
        t.total(),
        t.tick_delta(),
    )
}

/// The record a sequential run leaves when exactly the calls whose bit is set in `accounted`
/// saw irqtime enabled (the per-call arithmetic of spec §8.2).
fn replay(accounted: u32) -> Record {
    let (mut start, mut hard, mut soft, mut total) = (0u64, 0, 0, 0);
    for (i, (ctx, now)) in CALLS.iter().enumerate() {
        if accounted & (1 << i) == 0 {
            continue;
        }
        let delta = now - start;
        start += delta;
        let bucket = match ctx {
            IrqContext::Hardirq => &mut hard,
            IrqContext::Softirq {
                in_ksoftirqd: false,
            } => &mut soft,
            _ => continue,
        };
        *bucket += delta;
        total += delta;
    }
    (start, hard, soft, total, total)
}

/// Which way the key is flipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flip {
    /// Enabled at the start; main calls `disable_sched_clock_irqtime`.
    Disable,
    /// Disabled at the start; main calls `enable_sched_clock_irqtime`.
    Enable,
}

/// Main = CPU 0 flipping the key; spawned CPU 1 makes the three accounting calls of `CALLS`.
/// After both: CPU 1's record equals the replay of a prefix (disable) or suffix (enable) of
/// its calls, the key ends flipped, nothing warned. The cases count the calls that accounted.
pub fn flip_against_accounting<P: Policy>(flip: Flip) -> crate::Explored {
    crate::model_cases(CASES, move |cases| {
        let (m, _p, nr) = World::<P, 2>::shared();
        let cpu1 = nr.cpu(1).unwrap();
        if flip == Flip::Disable {
            m.enable_sched_clock_irqtime();
        }
        let acct = {
            let m = m.clone();
            thread::spawn(move || {
                for (ctx, now) in CALLS {
                    m.irqtime_account_irq(cpu1, ctx, now);
                }
            })
        };
        match flip {
            Flip::Disable => m.disable_sched_clock_irqtime(&TestSleepable),
            Flip::Enable => m.enable_sched_clock_irqtime(),
        }
        acct.join().unwrap();

        let got = record(m.irqtime(cpu1));
        let n = CALLS.len() as u32;
        let all = (1u32 << n) - 1;
        // Accounted calls: the first k (disable) or the last n - k (enable).
        let legal: Vec<Record> = (0..=n)
            .map(|k| match flip {
                Flip::Disable => replay(all >> (n - k)),
                Flip::Enable => replay(all & !((1u32 << k) - 1)),
            })
            .collect();
        let Some(k) = legal.iter().position(|r| *r == got) else {
            panic!(
                "irqtime: CPU 1's record {got:?} is no sequential replay of its calls ({legal:?})"
            )
        };
        cases.hit(
            CASES[match flip {
                Flip::Disable => k,
                Flip::Enable => CALLS.len() - k,
            }],
        );
        assert_eq!(m.irqtime_enabled(), flip == Flip::Enable);
        assert_eq!(m.warnings().total(nr), 0);
    })
}

/// Whether the flipping CPU waits for the other CPUs after `disable` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quiesce {
    /// No handshake: relies on the key alone (fails).
    None,
    /// An explicit handshake: every accounting call runs in its CPU's irqs-off section (a
    /// `loom` mutex per CPU, the model's stand-in); after `disable` the flipping CPU passes
    /// through each CPU's section once, as the kernel's text-patching sync (an IPI to every
    /// CPU, answered only outside irqs-off code) does.
    Handshake,
}

/// Key enabled at the start. Spawned CPU 1 makes the three accounting calls, each inside its
/// irqs-off section; main = CPU 0 disables irqtime, runs the handshake if `quiesce` asks for
/// it, then takes a snapshot of CPU 1's record and relies on it staying put: after CPU 1 is
/// done, the record must equal the snapshot. The cases count the calls that had accounted
/// when the snapshot was taken.
pub fn disable_then_rely_on_quiescence<P: Policy>(quiesce: Quiesce) -> crate::Explored {
    crate::model_cases(CASES, move |cases| {
        let (m, _p, nr) = World::<P, 2>::shared();
        let cpu1 = nr.cpu(1).unwrap();
        m.enable_sched_clock_irqtime();
        let irqs_off = Arc::new([Mutex::new(()), Mutex::new(())]);
        let acct = {
            let (m, irqs_off) = (m.clone(), irqs_off.clone());
            thread::spawn(move || {
                for (ctx, now) in CALLS {
                    let _irqs_off = irqs_off[1].lock().unwrap();
                    m.irqtime_account_irq(cpu1, ctx, now);
                }
            })
        };
        m.disable_sched_clock_irqtime(&TestSleepable);
        if quiesce == Quiesce::Handshake {
            for section in irqs_off.iter() {
                drop(section.lock().unwrap());
            }
        }
        let snapshot = record(m.irqtime(cpu1));
        acct.join().unwrap();
        assert_eq!(
            record(m.irqtime(cpu1)),
            snapshot,
            "{ACCOUNTED_AFTER_DISABLE}"
        );
        assert!(!m.irqtime_enabled());
        let n = CALLS.len() as u32;
        let k = (0..=n)
            .position(|k| replay((1u32 << k) - 1) == snapshot)
            .expect("the snapshot is a replay of a prefix of the calls");
        cases.hit(CASES[k]);
    })
}
