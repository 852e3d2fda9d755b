//! `CpuMask` under loom: concurrent `set`/`clear` of bits in one word never lose an update, and
//! a scan never invents a bit.
#![cfg(nohz_loom)]

use loom::sync::Arc;
use loom::thread;
use nohz::{CpuMask, NrCpuIds};

type Nr = NrCpuIds<64>;

fn nr() -> Nr {
    NrCpuIds::new(4).unwrap()
}

/// Two CPUs set their own bits of one word while a third bit is cleared: with `fetch_or` /
/// `fetch_and` every update survives. (A load+store implementation fails this model.)
#[test]
fn set_and_clear_in_one_word_never_lose_an_update() {
    loom_tests::model(|| {
        let mask = Arc::new(CpuMask::<1>::new());
        let n = nr();
        mask.set(n.cpu(2).unwrap());
        let m1 = mask.clone();
        let t1 = thread::spawn(move || m1.set(n.cpu(0).unwrap()));
        let m2 = mask.clone();
        let t2 = thread::spawn(move || m2.set(n.cpu(1).unwrap()));
        mask.clear(n.cpu(2).unwrap());
        t1.join().unwrap();
        t2.join().unwrap();
        let seen: Vec<usize> = mask.iter(n).map(|c| c.index()).collect();
        assert_eq!(seen, [0, 1]);
        assert_eq!(mask.weight(n), 2);
        assert!(!mask.is_empty(n));
    });
}

/// A scan racing with set/clear sees each bit either before or after the change, never a bit
/// nobody set, and never a bit twice; a bit that stays set throughout is always seen.
#[test]
fn scans_racing_with_updates_see_only_real_bits() {
    loom_tests::model(|| {
        let mask = Arc::new(CpuMask::<1>::new());
        let n = nr();
        mask.set(n.cpu(3).unwrap());
        mask.set(n.cpu(1).unwrap());
        let m = mask.clone();
        let t = thread::spawn(move || {
            m.clear(n.cpu(1).unwrap());
            m.set(n.cpu(0).unwrap());
        });
        let seen: Vec<usize> = mask.iter_wrap(2, n).unwrap().map(|c| c.index()).collect();
        t.join().unwrap();
        assert_eq!(seen[0], 3, "the bit that never changed comes first");
        for pair in seen.windows(2) {
            assert_ne!(pair[0], pair[1]);
        }
        assert!(seen.iter().all(|c| [0, 1, 3].contains(c)), "{seen:?}");
        assert!(!mask.is_empty(n));
    });
}
