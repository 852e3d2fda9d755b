//! `Timekeeper::update` under loom: the timekeeping CPU's tick and a CPU whose stopped tick an
//! interrupt ends (`tick_nohz_irq_enter`'s catch-up) can update jiffies at the same moment.
//! The compare-exchange makes every update land on the period grid exactly once: jiffies end
//! at the later update's count, never go back, and no period is counted twice. A plain load
//! and store does not (the second test runs that variant and loom finds the lost update).
#![cfg(nohz_loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicU64, Ordering::Relaxed};
use loom::thread;
use nohz::{Jiffies, Timekeeper};

const HZ: u32 = 1000;
const PERIOD: u64 = 1_000_000;

fn start() -> Jiffies {
    Jiffies::initial(HZ)
}

/// Two CPUs catch jiffies up to different times (2.5 and 3.2 periods) while a third reads:
/// the end state is the later time's 3 periods, each reader's view only moves forward, and a
/// CPU reading after its own update sees at least what it wrote.
#[test]
fn concurrent_updates_count_each_period_once() {
    loom_tests::model(|| {
        let tk = Arc::new(Timekeeper::<HZ>::new());
        let spawn = |now: u64| {
            let tk = tk.clone();
            thread::spawn(move || {
                tk.update(now);
                let (j, last) = tk.jiffies_update();
                assert!(
                    last >= now / PERIOD * PERIOD,
                    "its own update is visible to it"
                );
                assert_eq!(j, start().add((last / PERIOD) as usize), "read together");
            })
        };
        let a = spawn(5 * PERIOD / 2);
        let b = spawn(16 * PERIOD / 5);
        let first = tk.jiffies();
        let second = tk.jiffies();
        assert!(!second.is_before(first), "jiffies never go back");
        a.join().unwrap();
        b.join().unwrap();
        assert_eq!(tk.jiffies_update(), (start().add(3), 3 * PERIOD));
    });
}

/// The same race with `update` written as a load and a store: one CPU's older catch-up can
/// overwrite the other's newer one, and jiffies go back. Kept as an expected failure to show
/// the model sees the race the compare-exchange closes.
#[test]
#[should_panic(expected = "jiffies went back")]
fn a_load_and_store_update_loses_the_newer_time() {
    loom_tests::model(|| {
        let last = Arc::new(AtomicU64::new(0));
        let update = |last: &AtomicU64, now: u64| {
            let seen = last.load(Relaxed);
            if now >= seen + PERIOD {
                last.store(seen + (now - seen) / PERIOD * PERIOD, Relaxed);
            }
        };
        let l = last.clone();
        let a = thread::spawn(move || update(&l, 5 * PERIOD / 2));
        update(&last, 16 * PERIOD / 5);
        a.join().unwrap();
        assert_eq!(last.load(Relaxed), 3 * PERIOD, "jiffies went back");
    });
}
