//! `StaticKey` under loom: concurrent counting never loses a reference, flips serialise on the
//! count, and misuse is counted, never wrapped.
#![cfg(nohz_loom)]

use loom::sync::Arc;
use loom::thread;
use nohz::{StaticKey, Warning, Warnings};

/// Two CPUs take and drop references while a third takes one: the final count is exact.
#[test]
fn concurrent_inc_dec_keep_an_exact_count() {
    loom_tests::model(|| {
        let key = Arc::new(StaticKey::new_true());
        let warn = Arc::new(Warnings::<1>::new());
        let (k1, w1) = (key.clone(), warn.clone());
        let t1 = thread::spawn(move || {
            k1.inc(&w1.cpu_less()).unwrap();
            k1.dec(&w1.cpu_less()).unwrap();
        });
        let (k2, w2) = (key.clone(), warn.clone());
        let t2 = thread::spawn(move || k2.inc(&w2.cpu_less()).unwrap());
        key.dec(&warn.cpu_less()).unwrap();
        t1.join().unwrap();
        t2.join().unwrap();
        assert_eq!(key.count(), 1);
        assert!(key.enabled());
        assert_eq!(warn.outside_cpus(), 0);
    });
}

/// Racing `enable` and `disable` on a boolean key: the last flip wins, the count stays 0 or 1,
/// and neither warns.
#[test]
fn racing_enable_and_disable_stay_boolean() {
    loom_tests::model(|| {
        let key = Arc::new(StaticKey::new_false());
        let warn = Arc::new(Warnings::<1>::new());
        let (k1, w1) = (key.clone(), warn.clone());
        let t1 = thread::spawn(move || k1.enable(&w1.cpu_less()));
        let (k2, w2) = (key.clone(), warn.clone());
        let t2 = thread::spawn(move || k2.disable(&w2.cpu_less()));
        let enabled_by_t1 = t1.join().unwrap();
        let disabled_by_t2 = t2.join().unwrap();
        assert!(
            enabled_by_t1,
            "the key started at 0, so enable always flips it"
        );
        assert_eq!(key.count(), if disabled_by_t2 { 0 } else { 1 });
        assert_eq!(warn.outside_cpus(), 0);
    });
}

/// Two racing `dec`s on a count of 1: exactly one succeeds, the other is refused and counted;
/// the count never goes negative.
#[test]
fn racing_dec_at_one_never_wraps() {
    loom_tests::model(|| {
        let key = Arc::new(StaticKey::new_true());
        let warn = Arc::new(Warnings::<1>::new());
        let (k1, w1) = (key.clone(), warn.clone());
        let t1 = thread::spawn(move || k1.dec(&w1.cpu_less()).is_ok());
        let ok0 = key.dec(&warn.cpu_less()).is_ok();
        let ok1 = t1.join().unwrap();
        assert!(ok0 ^ ok1);
        assert_eq!(key.count(), 0);
        assert_eq!(warn.of_kind(Warning::StaticKeyDecUnderflow), 1);
    });
}
