//! `CpuMask` against a `BTreeSet`, for masks of 1, 2, 64 and 128 words, any runtime CPU count
//! within the capacity and any bit pattern (bits above `nr_cpu_ids` included: scans must
//! ignore them); `Jiffies` against exact `i128` time for every distance below half the range.
//!
//! `tests/primitives.rs` covers an 8192-CPU mask with a few live counts and an every-third-CPU
//! partner; this adds the other sizes, partners of another width and random patterns on both
//! sides, the full wrap and wrap-after families, and the jiffies edges.

use nohz::{CpuError, CpuId, CpuMask, Jiffies, JiffiesCell, NrCpuIds};
use proptest::prelude::*;
use std::collections::BTreeSet;

/// A word with the patterns scans get wrong: empty, full, one bit, all but one, random.
fn word() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => Just(0u64),
        1 => Just(u64::MAX),
        2 => (0..64u32).prop_map(|b| 1u64 << b),
        1 => (0..64u32).prop_map(|b| !(1u64 << b)),
        2 => any::<u64>(),
    ]
}

/// `words` words, or (a third of the time) only a few bits in an otherwise empty mask.
fn pattern(words: usize) -> impl Strategy<Value = Vec<u64>> {
    let bits = words * 64;
    prop_oneof![
        2 => prop::collection::vec(word(), words),
        1 => prop::collection::vec(0..bits, 0..8).prop_map(move |set| {
            let mut v = vec![0u64; words];
            for b in set {
                v[b / 64] |= 1 << (b % 64);
            }
            v
        }),
    ]
}

const BOUNDARIES: [usize; 12] = [63, 64, 65, 127, 128, 129, 511, 512, 513, 4095, 4096, 4097];

/// A live CPU count in `0..=cap`, clustered at word and line boundaries.
fn live(cap: usize) -> impl Strategy<Value = usize> {
    prop_oneof![
        1 => Just(0usize),
        1 => Just(1usize),
        1 => Just(cap),
        1 => Just(cap - 1),
        2 => prop::sample::select(BOUNDARIES.to_vec()).prop_map(move |n| n.min(cap)),
        4 => 0..=cap,
    ]
}

#[derive(Debug, Clone)]
enum Op {
    Set(usize),
    Clear(usize),
}

#[derive(Debug, Clone)]
struct Case {
    nr: usize,
    a: Vec<u64>,
    b: Vec<u64>,
    ops: Vec<Op>,
    start: usize,
    after: usize,
}

fn case(words: usize) -> impl Strategy<Value = Case> {
    let cap = words * 64;
    (live(cap), pattern(words), pattern(words)).prop_flat_map(move |(nr, a, b)| {
        // Ops on any bit of the capacity: those at or above nr must stay invisible to scans.
        let bit = prop_oneof![3 => 0..nr.max(1), 1 => 0..cap];
        let op = prop_oneof![bit.clone().prop_map(Op::Set), bit.prop_map(Op::Clear)];
        (
            Just(nr),
            Just(a),
            Just(b),
            prop::collection::vec(op, 0..24),
            0..=nr + 1,
            0..cap,
        )
            .prop_map(|(nr, a, b, ops, start, after)| Case {
                nr,
                a,
                b,
                ops,
                start,
                after,
            })
    })
}

fn fill<const W: usize, const N: usize>(words: &[u64]) -> (CpuMask<W>, BTreeSet<usize>) {
    let full = NrCpuIds::<N>::full();
    let mask = CpuMask::<W>::new();
    let mut set = BTreeSet::new();
    for (w, &bits) in words.iter().enumerate() {
        for b in 0..64 {
            if bits >> b & 1 != 0 {
                mask.set(full.cpu(w * 64 + b).unwrap());
                set.insert(w * 64 + b);
            }
        }
    }
    (mask, set)
}

/// At most `N + 1` CPUs: an iterator that never ends fails the comparison instead of hanging.
fn ids<const N: usize>(it: impl Iterator<Item = CpuId<N>>) -> Vec<usize> {
    it.take(N + 1).map(CpuId::index).collect()
}

/// Every query and iterator of a `W`-word mask (capacity `N = 64 * W`) against the set;
/// `other` is a partner of `W2` words (`W2 * 64 >= N`).
fn check_mask<const W: usize, const N: usize, const W2: usize>(c: &Case) {
    assert_eq!(CpuMask::<W>::CAPACITY, N);
    let full = NrCpuIds::<N>::full();
    let empty = CpuMask::<W>::default();
    assert!(empty.is_empty(full) && empty.weight(full) == 0 && empty.iter(full).next().is_none());
    let nr = NrCpuIds::<N>::new(c.nr).unwrap();
    let (a, mut sa) = fill::<W, N>(&c.a);
    for op in &c.ops {
        match *op {
            Op::Set(i) => {
                a.set(full.cpu(i).unwrap());
                sa.insert(i);
            }
            Op::Clear(i) => {
                a.clear(full.cpu(i).unwrap());
                sa.remove(&i);
            }
        }
    }
    let (b, sb) = fill::<W2, N>(&c.b);
    let live: Vec<usize> = sa.range(..c.nr).copied().collect();

    for i in 0..N {
        assert_eq!(a.test(full.cpu(i).unwrap()), sa.contains(&i), "test({i})");
    }
    assert_eq!(a.is_empty(nr), live.is_empty(), "is_empty");
    assert_eq!(a.weight(nr), live.len(), "weight");
    assert_eq!(
        a.first(nr).map(CpuId::index),
        live.first().copied(),
        "first"
    );
    assert_eq!(ids(a.iter(nr)), live, "iter");
    assert!(a.iter(nr).all(|cpu| nr.cpu(cpu.index()).is_ok()));

    let both: Vec<usize> = live.iter().copied().filter(|i| sb.contains(i)).collect();
    assert_eq!(ids(a.iter_and(&b, nr)), both, "iter_and");
    assert_eq!(ids(b.iter_and(&a, nr)), both, "iter_and, swapped");
    assert_eq!(ids(a.iter_and(&a, nr)), live, "iter_and with itself");

    if c.start <= c.nr {
        let want: Vec<usize> = live
            .iter()
            .copied()
            .filter(|&i| i >= c.start)
            .chain(live.iter().copied().filter(|&i| i < c.start))
            .collect();
        assert_eq!(
            ids(a.iter_wrap(c.start, nr).unwrap()),
            want,
            "iter_wrap({})",
            c.start
        );
    } else {
        assert_eq!(
            a.iter_wrap(c.start, nr).unwrap_err(),
            CpuError::OutOfRange {
                index: c.start,
                nr_cpu_ids: c.nr
            }
        );
    }
    // After a CPU of a machine at least this big: the bits after it, then up to it, it last.
    let after = full.cpu(c.after).unwrap();
    let from = (c.after + 1).min(c.nr);
    let want: Vec<usize> = live
        .iter()
        .copied()
        .filter(|&i| i >= from)
        .chain(live.iter().copied().filter(|&i| i < from))
        .collect();
    assert_eq!(
        ids(a.iter_wrap_after(after, nr)),
        want,
        "iter_wrap_after({})",
        c.after
    );

    // Clearing every bit empties it, whatever lay above nr.
    for &i in &sa {
        a.clear(full.cpu(i).unwrap());
    }
    assert!(a.is_empty(full) && a.first(full).is_none() && a.weight(full) == 0);
}

proptest! {
    #![proptest_config(crate::config(256))]
    #[test]
    fn one_word_masks_match_a_set(c in case(1)) {
        check_mask::<1, 64, 1>(&c);
        check_mask::<1, 64, 2>(&c);
    }

    #[test]
    fn two_word_masks_match_a_set(c in case(2)) {
        check_mask::<2, 128, 2>(&c);
        check_mask::<2, 128, 64>(&c);
    }

    /// One whole 64-byte line and a part of one: the scans' line-at-a-time paths and their
    /// remainders meet inside the array.
    #[test]
    fn twelve_word_masks_match_a_set(c in case(12)) {
        check_mask::<12, 768, 12>(&c);
        check_mask::<12, 768, 16>(&c);
    }
}

proptest! {
    #![proptest_config(crate::config(48))]
    #[test]
    fn sixty_four_word_masks_match_a_set(c in case(64)) {
        check_mask::<64, 4096, 64>(&c);
        check_mask::<64, 4096, 128>(&c);
    }

    #[test]
    fn one_hundred_twenty_eight_word_masks_match_a_set(c in case(128)) {
        check_mask::<128, 8192, 128>(&c);
    }
}

/// A distance in `-(2^63 - 1) ..= 2^63 - 1`, edge-heavy.
fn distance() -> impl Strategy<Value = i128> {
    let max = isize::MAX as i128;
    prop_oneof![
        1 => Just(0i128),
        1 => Just(1i128),
        1 => Just(-1i128),
        1 => Just(max),
        1 => Just(-max),
        1 => Just(max - 1),
        1 => Just(1 - max),
        2 => -1000i128..=1000,
        4 => -max..=max,
    ]
}

/// A base anywhere, clustered at the wrap and at the signed boundary.
fn base() -> impl Strategy<Value = usize> {
    prop_oneof![
        2 => (0usize..=100).prop_map(|k| usize::MAX - k),
        1 => 0usize..=100,
        1 => (0usize..=100).prop_map(|k| (isize::MAX as usize).wrapping_add(k).wrapping_sub(50)),
        3 => any::<usize>(),
    ]
}

proptest! {
    #![proptest_config(crate::config(2048))]

    /// For every distance below half the range, the four comparisons agree with exact time,
    /// from any base (across the wrap included).
    #[test]
    fn jiffies_compare_like_exact_time(a in base(), d in distance()) {
        let a = Jiffies::new(a);
        let b = if d >= 0 { a.add(d as usize) } else { a.sub(d.unsigned_abs() as usize) };
        prop_assert_eq!(b.is_after(a), d > 0);
        prop_assert_eq!(b.is_before(a), d < 0);
        prop_assert_eq!(b.is_after_eq(a), d >= 0);
        prop_assert_eq!(b.is_before_eq(a), d <= 0);
        prop_assert_eq!(a.is_after(b), d < 0);
        prop_assert_eq!(a.is_before(b), d > 0);
        prop_assert_eq!(a.is_after_eq(b), d <= 0);
        prop_assert_eq!(a.is_before_eq(b), d >= 0);
        // Arithmetic is exact modulo the word.
        prop_assert_eq!(b.get() as i128, (a.get() as i128 + d).rem_euclid(1i128 << usize::BITS));
        if d >= 0 {
            prop_assert_eq!(b.since(a) as i128, d);
            prop_assert_eq!(b.sub(d as usize), a);
        } else {
            prop_assert_eq!(a.since(b) as i128, -d);
        }
    }

    /// The shared counter advances like exact arithmetic modulo the word, across the wrap.
    #[test]
    fn the_jiffies_cell_advances_exactly(
        back in 0usize..=100,
        steps in prop::collection::vec(prop_oneof![1usize..=10, 0usize..=100_000], 0..40),
    ) {
        let start = usize::MAX - back;
        let cell = JiffiesCell::new(Jiffies::new(start));
        let mut exact = start as u128;
        for n in steps {
            let got = cell.advance(n);
            exact += n as u128;
            prop_assert_eq!(got.get(), exact as usize);
            prop_assert_eq!(cell.get(), got);
            let elapsed = exact - start as u128;
            prop_assert_eq!(cell.get().since(Jiffies::new(start)) as u128, elapsed);
            prop_assert_eq!(cell.get().is_after(Jiffies::new(start)), elapsed > 0);
        }
    }
}

/// At exactly half the range the signed difference flips: the documented horizon.
#[test]
fn half_the_range_is_the_horizon() {
    for base in [
        0usize,
        1,
        usize::MAX,
        usize::MAX / 2,
        isize::MAX as usize + 1,
    ] {
        let a = Jiffies::new(base);
        let inside = a.add(isize::MAX as usize);
        let half = a.add(isize::MAX as usize + 1);
        assert!(inside.is_after(a) && a.is_before(inside));
        assert!(!inside.is_before(a) && inside.is_after_eq(a));
        // At half, each reads as strictly after and before the other: meaningless, as the
        // kernel's macros are.
        assert!(half.is_after(a) && half.is_before(a) && a.is_after(half));
        assert!(!half.is_after_eq(a) && !half.is_before_eq(a));
    }
}
