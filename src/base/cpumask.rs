//! `CpuMask`: an atomic CPU bitmap (`struct cpumask`).
//!
//! C source: `include/linux/cpumask.h`, `lib/cpumask.c` (`cpumask_set_cpu`, `cpumask_empty`, `for_each_cpu_wrap`, ...).
//!
//! # Design
//!
//! The mask is `W` 64-bit words, packed, in one [`CachePadded`] block: the words of one mask
//! share lines with each other and with nothing else. Stable Rust cannot derive a word count
//! from a bit count in a generic, so the mask is sized in words (capacity `64 * W` CPUs); a
//! zero-word mask, or one too small for the `CpuId<N>` it is used with, fails the build.
//!
//! Writers ([`CpuMask::set`], [`CpuMask::clear`]) are single `Relaxed` RMWs whose result is
//! ignored, so they compile to one locked `or`/`and` (no `cmpxchg` loop). They order nothing:
//! the NOHZ code that needs ordering around them puts a named fence next to them.
//!
//! Readers load words one at a time with `Relaxed`. **A read of more than one word is not a
//! snapshot**: bits set or cleared during a scan may or may not be seen, as with the kernel's
//! `cpumask_*` helpers; consumers re-check what they find (`idle_cpu()`). Every scan stops at
//! the runtime `nr_cpu_ids` passed to it, and ignores bits at or above it.
//!
//! [`CpuMask::is_empty`] runs on the scheduler tick, so it is shaped for cache lines: it
//! OR-reduces the words of one 64-byte line (eight words) at a time and stops at the first line
//! with a bit set. An empty mask costs a short, branch-light scan; a busy one touches only the
//! lines up to its first set bit, and each line it does not touch is a transfer it does not
//! pay while other CPUs write there.

use crate::cpu::{CpuError, CpuId, NrCpuIds};
use crate::sync::{AtomicU64, Ordering::Relaxed, atomic_array};
use crossbeam_utils::CachePadded;

/// Words per 64-byte cache line; the unit of [`CpuMask::is_empty`]'s reduction.
const WORDS_PER_LINE: usize = 8;

/// Bits per 64-byte cache line.
const BITS_PER_LINE: usize = WORDS_PER_LINE * 64;

/// Compile-time checks on the pairing of a mask of `W` words with CPU capacity `N`.
struct Fits<const W: usize, const N: usize>;
impl<const W: usize, const N: usize> Fits<W, N> {
    const OK: () = assert!(
        N <= W * 64,
        "CpuMask<W> is too small for CpuId<N>: need W >= N / 64"
    );
}

struct Words<const W: usize>;
impl<const W: usize> Words<W> {
    const OK: () = assert!(
        W >= 1 && W <= crate::cpu::MAX_CPUS / 64,
        "a CpuMask needs 1..=128 words"
    );
}

/// An atomic bitmap of `64 * W` CPUs (`struct cpumask`, `cpumask_var_t` with OFFSTACK=n).
#[doc(alias = "cpumask")]
#[derive(Debug)]
pub struct CpuMask<const W: usize> {
    words: CachePadded<[AtomicU64; W]>,
}

/// The OR of one line's eight words, as a balanced tree (three dependent ORs, not seven).
#[inline(always)]
fn line_or(line: &[AtomicU64; WORDS_PER_LINE]) -> u64 {
    let w = |i: usize| line[i].load(Relaxed);
    ((w(0) | w(1)) | (w(2) | w(3))) | ((w(4) | w(5)) | (w(6) | w(7)))
}

#[inline(always)]
const fn split(index: usize) -> (usize, u64) {
    (index / 64, 1u64 << (index % 64))
}

/// The first set bit of line `l`, reloaded word by word: whether or not the line changed since
/// it was OR-reduced, a bit found now was set during the scan. `None` if it emptied meanwhile.
#[inline(always)]
fn first_in_line<const N: usize>(line: &[AtomicU64; WORDS_PER_LINE], l: usize) -> Option<CpuId<N>> {
    line.iter().enumerate().find_map(|(i, w)| {
        let v = w.load(Relaxed);
        (v != 0)
            .then(|| CpuId::from_scan((l * WORDS_PER_LINE + i) * 64 + v.trailing_zeros() as usize))
    })
}

/// Words `0..full` are entirely below `nr`; `tail` masks the valid bits of word `full`.
#[inline(always)]
const fn bounds(nr: usize) -> (usize, u64) {
    (nr / 64, (1u64 << (nr % 64)) - 1)
}

impl<const W: usize> CpuMask<W> {
    crate::maybe_const_fn! {
        /// An empty mask.
        pub fn new() -> Self {
            let () = Words::<W>::OK;
            CpuMask { words: CachePadded::new(atomic_array![AtomicU64::new(0); W]) }
        }
    }

    /// Bits the mask can hold (`64 * W`).
    pub const CAPACITY: usize = 64 * W;

    /// Sets `cpu`'s bit (`cpumask_set_cpu`): one relaxed `fetch_or`, result unused (`lock or`).
    #[doc(alias = "cpumask_set_cpu")]
    #[inline]
    pub fn set<const N: usize>(&self, cpu: CpuId<N>) {
        let () = Fits::<W, N>::OK;
        let (word, bit) = split(cpu.index());
        self.words[word].fetch_or(bit, Relaxed);
    }

    /// Clears `cpu`'s bit (`cpumask_clear_cpu`): one relaxed `fetch_and`, result unused.
    #[doc(alias = "cpumask_clear_cpu")]
    #[inline]
    pub fn clear<const N: usize>(&self, cpu: CpuId<N>) {
        let () = Fits::<W, N>::OK;
        let (word, bit) = split(cpu.index());
        self.words[word].fetch_and(!bit, Relaxed);
    }

    /// Whether `cpu`'s bit is set (`cpumask_test_cpu`): one relaxed load.
    #[doc(alias = "cpumask_test_cpu")]
    #[inline]
    pub fn test<const N: usize>(&self, cpu: CpuId<N>) -> bool {
        let () = Fits::<W, N>::OK;
        let (word, bit) = split(cpu.index());
        self.words[word].load(Relaxed) & bit != 0
    }

    #[inline(always)]
    fn word(&self, i: usize) -> u64 {
        self.words[i].load(Relaxed)
    }

    /// Whether no bit below `nr_cpu_ids` is set (`cpumask_empty`). Not a snapshot; stops at
    /// the first 64-byte line that has a bit set (see the module docs).
    #[doc(alias = "cpumask_empty")]
    #[inline]
    pub fn is_empty<const N: usize>(&self, nr_cpu_ids: NrCpuIds<N>) -> bool {
        let () = Fits::<W, N>::OK;
        let nr = nr_cpu_ids.get();
        // The lines wholly below nr_cpu_ids, as fixed-size lines: eight loads, a tree of seven
        // ORs and one branch per line, two lines per turn of the loop (its upkeep is paid every
        // 128 bytes): the scan is bound by how many instructions a core can issue.
        let whole = nr / BITS_PER_LINE;
        let (lines, _) = self.words.as_chunks::<WORDS_PER_LINE>();
        let (pairs, odd) = lines[..whole].as_chunks::<2>();
        for [a, b] in pairs {
            if line_or(a) != 0 || line_or(b) != 0 {
                return false;
            }
        }
        if let [line] = odd
            && line_or(line) != 0
        {
            return false;
        }
        // Then the line nr_cpu_ids ends in, if it ends inside one: one test for its live bits.
        let rest = nr % BITS_PER_LINE;
        if rest == 0 {
            return true;
        }
        let base = whole * WORDS_PER_LINE;
        let (full, tail) = bounds(rest);
        let body = self.words[base..base + full]
            .iter()
            .fold(0, |acc, w| acc | w.load(Relaxed));
        let last = if tail == 0 {
            0
        } else {
            self.word(base + full) & tail
        };
        body | last == 0
    }

    /// The number of bits set below `nr_cpu_ids` (`cpumask_weight`). Not a snapshot; reads
    /// every word, so keep it off hot paths.
    #[doc(alias = "cpumask_weight")]
    pub fn weight<const N: usize>(&self, nr_cpu_ids: NrCpuIds<N>) -> usize {
        let () = Fits::<W, N>::OK;
        let (full, tail) = bounds(nr_cpu_ids.get());
        let body: u32 = self.words[..full]
            .iter()
            .map(|w| w.load(Relaxed).count_ones())
            .sum();
        let last = if tail == 0 {
            0
        } else {
            (self.word(full) & tail).count_ones()
        };
        (body + last) as usize
    }

    /// The lowest CPU whose bit is set (`cpumask_first`), or `None`. Skips empty lines with the
    /// same reduction as [`is_empty`](Self::is_empty).
    #[doc(alias = "cpumask_first")]
    pub fn first<const N: usize>(&self, nr_cpu_ids: NrCpuIds<N>) -> Option<CpuId<N>> {
        let () = Fits::<W, N>::OK;
        let nr = nr_cpu_ids.get();
        // The lines wholly below nr_cpu_ids, two per turn of the loop, as `is_empty` scans them.
        let whole = nr / BITS_PER_LINE;
        let (lines, _) = self.words.as_chunks::<WORDS_PER_LINE>();
        let (pairs, odd) = lines[..whole].as_chunks::<2>();
        for (p, pair) in pairs.iter().enumerate() {
            for (k, line) in pair.iter().enumerate() {
                if line_or(line) != 0
                    && let Some(cpu) = first_in_line(line, 2 * p + k)
                {
                    return Some(cpu);
                }
            }
        }
        if let [line] = odd
            && line_or(line) != 0
            && let Some(cpu) = first_in_line(line, whole - 1)
        {
            return Some(cpu);
        }
        // Then the line nr_cpu_ids ends in, if it ends inside one: its whole words, then the
        // partial word.
        let rest = nr % BITS_PER_LINE;
        if rest == 0 {
            return None;
        }
        let base = whole * WORDS_PER_LINE;
        let (full, tail) = bounds(rest);
        let words = &self.words[base..base + full];
        if let Some((i, v)) = words
            .iter()
            .map(|w| w.load(Relaxed))
            .enumerate()
            .find(|&(_, v)| v != 0)
        {
            return Some(CpuId::from_scan(
                (base + i) * 64 + v.trailing_zeros() as usize,
            ));
        }
        let v = if tail == 0 {
            0
        } else {
            self.word(base + full) & tail
        };
        (v != 0).then(|| CpuId::from_scan((base + full) * 64 + v.trailing_zeros() as usize))
    }

    /// The set CPUs below `nr_cpu_ids`, ascending (`for_each_cpu`). Words are read lazily.
    #[doc(alias = "for_each_cpu")]
    pub fn iter<const N: usize>(&self, nr_cpu_ids: NrCpuIds<N>) -> Iter<'_, N> {
        let () = Fits::<W, N>::OK;
        Iter::new(&self.words[..], None, 0, nr_cpu_ids.get(), 0)
    }

    /// The CPUs set in both `self` and `other` below `nr_cpu_ids`, ascending
    /// (`for_each_cpu_and`). Words of both masks are read lazily.
    #[doc(alias = "for_each_cpu_and")]
    pub fn iter_and<'a, const W2: usize, const N: usize>(
        &'a self,
        other: &'a CpuMask<W2>,
        nr_cpu_ids: NrCpuIds<N>,
    ) -> Iter<'a, N> {
        let () = Fits::<W, N>::OK;
        let () = Fits::<W2, N>::OK;
        Iter::new(
            &self.words[..],
            Some(&other.words[..]),
            0,
            nr_cpu_ids.get(),
            0,
        )
    }

    /// The set CPUs in `[start, nr_cpu_ids)` ascending, then those in `[0, start)` ascending
    /// (`for_each_cpu_wrap`). `start == nr_cpu_ids` begins at 0. Each bit is visited at most
    /// once. A `start` above `nr_cpu_ids` is refused.
    #[doc(alias = "for_each_cpu_wrap")]
    pub fn iter_wrap<const N: usize>(
        &self,
        start: usize,
        nr_cpu_ids: NrCpuIds<N>,
    ) -> Result<Iter<'_, N>, CpuError> {
        let () = Fits::<W, N>::OK;
        let nr = nr_cpu_ids.get();
        if start > nr {
            return Err(CpuError::OutOfRange {
                index: start,
                nr_cpu_ids: nr,
            });
        }
        Ok(Iter::new(&self.words[..], None, start, nr, start))
    }

    /// The CPUs set in both `self` and `other`, in [`iter_wrap`](Self::iter_wrap)'s order from
    /// `start`: `for_each_cpu_wrap` over `self` that skips the CPUs `other` lacks, with both
    /// masks' words ANDed as the walk reaches them. A `start` above `nr_cpu_ids` is refused.
    pub fn iter_and_wrap<'a, const W2: usize, const N: usize>(
        &'a self,
        other: &'a CpuMask<W2>,
        start: usize,
        nr_cpu_ids: NrCpuIds<N>,
    ) -> Result<Iter<'a, N>, CpuError> {
        let () = Fits::<W2, N>::OK;
        let mut walk = self.iter_wrap(start, nr_cpu_ids)?;
        walk.b = Some(&other.words[..]);
        Ok(walk)
    }

    /// The set CPUs starting after `cpu` and wrapping round, `cpu` itself last: the ILB's
    /// `for_each_cpu_wrap(i, mask, this_cpu + 1)`. A `cpu` at or above `nr_cpu_ids` (one from
    /// another machine) scans from 0.
    pub fn iter_wrap_after<const N: usize>(
        &self,
        cpu: CpuId<N>,
        nr_cpu_ids: NrCpuIds<N>,
    ) -> Iter<'_, N> {
        let () = Fits::<W, N>::OK;
        let nr = nr_cpu_ids.get();
        let start = (cpu.index() + 1).min(nr);
        Iter::new(&self.words[..], None, start, nr, start)
    }
}

impl<const W: usize> Default for CpuMask<W> {
    fn default() -> Self {
        Self::new()
    }
}

/// An ascending walk over a range of bits of one mask (or of the AND of two), followed, for
/// [`CpuMask::iter_wrap`], by a second range. Yields [`CpuId`]s; reads words lazily.
#[derive(Debug, Clone)]
pub struct Iter<'a, const N: usize> {
    a: &'a [AtomicU64],
    b: Option<&'a [AtomicU64]>,
    /// First bit of the current range (masks the first word).
    lo: usize,
    /// End (exclusive) of the current range.
    hi: usize,
    /// End of the wrapped second range `[0, wrap_hi)`, once the first is done; 0 = none.
    wrap_hi: usize,
    /// The next word to load.
    next_word: usize,
    /// Bits of the last loaded word not yet yielded.
    bits: u64,
    /// Bit index of bit 0 of `bits`.
    base: usize,
}

impl<'a, const N: usize> Iter<'a, N> {
    fn new(
        a: &'a [AtomicU64],
        b: Option<&'a [AtomicU64]>,
        lo: usize,
        hi: usize,
        wrap_hi: usize,
    ) -> Self {
        Iter {
            a,
            b,
            lo,
            hi,
            wrap_hi,
            next_word: lo / 64,
            bits: 0,
            base: 0,
        }
    }

    #[inline]
    fn load(&self, i: usize) -> u64 {
        let v = self.a[i].load(Relaxed);
        match self.b {
            // Skip the second load when the first word is already empty.
            Some(b) if v != 0 => v & b[i].load(Relaxed),
            _ => v,
        }
    }
}

impl<const N: usize> Iterator for Iter<'_, N> {
    type Item = CpuId<N>;

    fn next(&mut self) -> Option<CpuId<N>> {
        // Each turn loads a word of one of the (at most two) ranges or starts the second: a
        // call that turns more often than that never ends. Debug builds (the tests) stop it
        // at once rather than hang.
        let mut turns = 0usize;
        loop {
            turns += 1;
            debug_assert!(
                turns <= 2 * self.a.len() + 2,
                "cpumask: a scan that never ends"
            );
            if self.bits != 0 {
                let bit = self.base + self.bits.trailing_zeros() as usize;
                self.bits &= self.bits - 1;
                return Some(CpuId::from_scan(bit));
            }
            if self.next_word * 64 >= self.hi {
                if self.wrap_hi == 0 {
                    return None;
                }
                // Start the wrapped range [0, wrap_hi).
                (self.lo, self.hi, self.wrap_hi, self.next_word) = (0, self.wrap_hi, 0, 0);
                continue;
            }
            let w = self.next_word;
            self.next_word += 1;
            self.base = w * 64;
            let mut v = self.load(w);
            if w == self.lo / 64 {
                v &= !0u64 << (self.lo % 64);
            }
            let end = self.hi - self.base;
            if end < 64 {
                v &= (1u64 << end) - 1;
            }
            self.bits = v;
        }
    }
}

#[cfg(all(test, not(nohz_loom)))]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    fn nr<const N: usize>(n: usize) -> NrCpuIds<N> {
        NrCpuIds::new(n).unwrap()
    }

    /// The CPUs an iterator yields. One that yields more than `N` never ends (a scan whose bit
    /// clearing or word step broke): the crate's own scans would then hang the other tests of
    /// this binary, so the whole binary fails at once instead of running into a timeout.
    fn ids<const N: usize>(it: impl Iterator<Item = CpuId<N>>) -> Vec<usize> {
        let v: Vec<usize> = it.take(N + 1).map(CpuId::index).collect();
        if v.len() > N {
            std::eprintln!("a cpumask iterator yielded more than {N} CPUs: it never ends");
            std::process::exit(101);
        }
        v
    }

    /// Every operation at `live` CPUs, with bits on both sides of each word boundary.
    fn exercise<const W: usize, const N: usize>(live: usize) {
        let m = CpuMask::<W>::new();
        let nrc = nr::<N>(live);
        assert!(m.is_empty(nrc));
        assert_eq!(m.first(nrc), None);
        assert_eq!(m.weight(nrc), 0);
        let mut want: Vec<usize> = [0, 1, 62, 63, 64, 65, 127, 128, 4095, 4096, 8191]
            .into_iter()
            .filter(|&c| c < live)
            .collect();
        want.push(live - 1);
        want.sort_unstable();
        want.dedup();
        for &c in &want {
            m.set(nrc.cpu(c).unwrap());
        }
        for c in 0..live {
            assert_eq!(m.test(nrc.cpu(c).unwrap()), want.contains(&c), "bit {c}");
        }
        assert!(!m.is_empty(nrc));
        assert_eq!(m.weight(nrc), want.len());
        assert_eq!(m.first(nrc).unwrap().index(), want[0]);
        assert_eq!(ids(m.iter(nrc)), want);
        // Wrap from each interesting start: [start, nr) then [0, start).
        for start in [0, 1, 63, 64, 65, live / 2, live - 1, live] {
            let start = start.min(live);
            let mut exp: Vec<usize> = want.iter().copied().filter(|&c| c >= start).collect();
            exp.extend(want.iter().copied().filter(|&c| c < start));
            assert_eq!(ids(m.iter_wrap(start, nrc).unwrap()), exp, "start {start}");
        }
        // Clearing the last live CPU empties the tail word correctly.
        for &c in &want {
            m.clear(nrc.cpu(c).unwrap());
        }
        assert!(m.is_empty(nrc));
        assert_eq!(m.iter(nrc).next(), None);
    }

    /// `cpumask_first` with one CPU set, wherever it lies: a whole line below `nr_cpu_ids`,
    /// the whole words of the line `nr_cpu_ids` ends in, or its partial last word.
    fn first_finds_a_lone_cpu<const W: usize, const N: usize>(live: usize) {
        let m = CpuMask::<W>::new();
        let nrc = nr::<N>(live);
        for c in [0, 63, 64, 100, 511, 512, 575, 576, 600, live - 1] {
            if c >= live {
                continue;
            }
            let cpu = nrc.cpu(c).unwrap();
            m.set(cpu);
            assert_eq!(m.first(nrc), Some(cpu), "{c} alone of {live}");
            m.clear(cpu);
        }
        assert_eq!(m.first(nrc), None);
    }

    #[test]
    fn first_finds_the_lowest_cpu_in_every_part_of_the_mask() {
        first_finds_a_lone_cpu::<2, 128>(100);
        first_finds_a_lone_cpu::<2, 128>(128);
        first_finds_a_lone_cpu::<10, 640>(601);
        first_finds_a_lone_cpu::<16, 1024>(1000);
    }

    #[test]
    fn word_boundaries() {
        exercise::<1, 64>(1);
        exercise::<1, 64>(63);
        exercise::<1, 64>(64);
        exercise::<2, 128>(65);
        exercise::<64, 4096>(4096);
        exercise::<128, 8192>(8192);
        exercise::<128, 8192>(4097);
    }

    #[test]
    fn scans_stop_at_nr_cpu_ids() {
        // Bits of a bigger machine's ids (same capacity) above this machine's nr are ignored.
        let m = CpuMask::<2>::new();
        let big = nr::<128>(128);
        let small = nr::<128>(70);
        m.set(big.cpu(69).unwrap());
        m.set(big.cpu(70).unwrap());
        m.set(big.cpu(127).unwrap());
        assert_eq!(m.weight(small), 1);
        assert_eq!(ids(m.iter(small)), [69]);
        assert_eq!(ids(m.iter_wrap(70, small).unwrap()), [69]);
        m.clear(big.cpu(69).unwrap());
        assert!(m.is_empty(small));
        assert_eq!(m.first(small), None);
        assert!(!m.is_empty(big));
        assert_eq!(m.first(big).unwrap().index(), 70);
        assert!(m.is_empty(nr::<128>(0)));
    }

    #[test]
    fn iter_wrap_refuses_start_beyond_nr() {
        let m = CpuMask::<1>::new();
        let n = nr::<64>(8);
        assert_eq!(
            m.iter_wrap(9, n).unwrap_err(),
            CpuError::OutOfRange {
                index: 9,
                nr_cpu_ids: 8
            }
        );
        assert!(m.iter_wrap(8, n).is_ok());
    }

    #[test]
    fn iter_wrap_after_visits_self_last() {
        let m = CpuMask::<1>::new();
        let n = nr::<64>(6);
        for c in [0, 2, 3, 5] {
            m.set(n.cpu(c).unwrap());
        }
        assert_eq!(ids(m.iter_wrap_after(n.cpu(3).unwrap(), n)), [5, 0, 2, 3]);
        assert_eq!(ids(m.iter_wrap_after(n.cpu(5).unwrap(), n)), [0, 2, 3, 5]);
        // A CPU id from a bigger machine scans from 0.
        let foreign = nr::<64>(64).cpu(40).unwrap();
        assert_eq!(ids(m.iter_wrap_after(foreign, n)), [0, 2, 3, 5]);
    }

    #[test]
    fn iter_and_wrap_is_the_wrapped_walk_of_the_intersection() {
        let a = CpuMask::<2>::new();
        let b = CpuMask::<2>::new();
        let n = nr::<128>(100);
        for c in [1, 5, 63, 64, 70, 99] {
            a.set(n.cpu(c).unwrap());
        }
        for c in [5, 6, 63, 70, 99] {
            b.set(n.cpu(c).unwrap());
        }
        for start in 0..=100 {
            let filtered: Vec<usize> = a
                .iter_wrap(start, n)
                .unwrap()
                .filter(|&c| b.test(c))
                .map(|c| c.index())
                .collect();
            assert_eq!(
                ids(a.iter_and_wrap(&b, start, n).unwrap()),
                filtered,
                "start {start}"
            );
        }
        assert_eq!(ids(a.iter_and_wrap(&b, 64, n).unwrap()), [70, 99, 5, 63]);
        assert!(a.iter_and_wrap(&b, 101, n).is_err());
    }

    #[test]
    fn iter_and_intersects_lazily() {
        let a = CpuMask::<2>::new();
        let b = CpuMask::<2>::new();
        let n = nr::<128>(100);
        for c in [1, 5, 64, 70, 99] {
            a.set(n.cpu(c).unwrap());
        }
        for c in [5, 6, 70, 99] {
            b.set(n.cpu(c).unwrap());
        }
        assert_eq!(ids(a.iter_and(&b, n)), [5, 70, 99]);
        // Bits are read as the walk reaches their word: a later word's change is seen.
        let mut it = a.iter_and(&b, n);
        assert_eq!(it.next().unwrap().index(), 5);
        b.clear(n.cpu(70).unwrap());
        assert_eq!(ids(it), [99]);
    }

    #[test]
    fn set_and_clear_touch_only_their_bit() {
        let m = CpuMask::<1>::new();
        let n = nr::<64>(64);
        m.set(n.cpu(3).unwrap());
        m.set(n.cpu(3).unwrap());
        m.set(n.cpu(4).unwrap());
        m.clear(n.cpu(3).unwrap());
        m.clear(n.cpu(10).unwrap());
        assert_eq!(ids(m.iter(n)), [4]);
    }
}
