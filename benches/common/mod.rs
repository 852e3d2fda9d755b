//! Set-up shared by the benches: machines on the heap with each CPU in an LLC of its own, the
//! layout the benches rely on checked at start-up, and the baselines the targets are ratios
//! against (spec/performance.md). The pacing fence and the rest of the measurement machinery
//! are `nohz_stress::measure`'s.
//!
//! Every object whose placement matters is allocated at run time and its address escapes
//! through [`black_box`], and the state the measured paths read is stored at run time: with
//! `lto = "fat"` the compiler may otherwise split an aligned object into separate globals or
//! constant-fold atomics it never sees written.

use nohz::{CachePadded, CpuId, CpuMask, Jiffies, NrCpuIds, Policy, StaticKey};
use nohz_testing::{HostPlatform, World};
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The cache-line granule the crate pads to (128 bytes on x86-64 and aarch64).
pub const LINE: usize = align_of::<CachePadded<u8>>();

/// CPUs of the benched machine: one per host core the contention bench uses.
pub const CPUS: usize = 2;

/// Bits of the masks of T6 and T7.
pub const MASK_BITS: usize = 4096;

/// Words of the masks of T6 and T7.
pub const MASK_WORDS: usize = MASK_BITS / 64;

/// The benched machine under policy `P`.
pub type BenchMachine<P> = nohz::machine!(P, CPUS);

/// Where the benched clock starts, in jiffies (any value; it never moves).
pub const START: usize = 1000;

/// A machine and its platform, both on the heap, every CPU in an LLC of its own, so that the
/// only lines two CPUs share are the global `nohz` ones (the mask and the scalar line): what
/// the spec calls a "pair" runs on it. As in the kernel, an LLC of one CPU is a degenerate
/// domain, so no CPU keeps a busy count: a pair is the mask bit set and cleared, the O1 fence
/// and the policy's flag upkeep.
pub struct Rig<P: Policy> {
    /// The machine (the shared test rig's, `nohz_testing::World`).
    pub m: Arc<BenchMachine<P>>,
    /// Its recording platform (only read on the paths benched: `this_cpu` stays unset, so the
    /// on-CPU check reads one word and never warns).
    pub plat: Arc<HostPlatform<CPUS>>,
    /// CPU 0 and CPU 1.
    pub cpus: [CpuId<CPUS>; CPUS],
}

impl<P: Policy> Rig<P> {
    /// Boots a machine of [`CPUS`] CPUs, one LLC each, with `sched_clock_irqtime` enabled (so
    /// `irqtime_enabled` takes its likely arm), and checks the layout the benches rely on.
    pub fn new() -> Self {
        // The shared test rig boots it (CPU 0 keeping time); both objects are on the heap and
        // their addresses escape, so the layout checked below is the one measured.
        let World { m, p: plat } =
            World::<P, CPUS, { nohz::mask_words(CPUS) }>::booted(CPUS, Jiffies::new(START));
        let (m, plat) = (black_box(m), black_box(plat));
        let nr = m.nr_cpu_ids();
        plat.set_llc_size(1);
        m.rebuild_sched_domains(&*plat)
            .expect("one LLC per CPU is a valid topology");
        m.enable_sched_clock_irqtime();
        let cpus = [0, 1].map(|i| nr.cpu(i).expect("the machine has 2 CPUs"));
        let rig = Rig { m, plat, cpus };
        rig.check_layout();
        rig
    }

    /// Asserts the placement every measurement depends on; panics (failing the bench) if a
    /// build ever moves things.
    fn check_layout(&self) {
        let m = &*self.m;
        let line_of = |addr: usize| addr / LINE;
        // Each CPU alone in its LLC: a degenerate domain, no `sd_llc`, no busy count.
        for &cpu in &self.cpus {
            assert_eq!(m.llc_leader(cpu), None, "{cpu} has no LLC domain");
            assert_eq!(m.llc_nr_busy_cpus(cpu), None, "{cpu} keeps no busy count");
        }
        // The two runqueues on distinct lines.
        let rq = |i: usize| m.rq(self.cpus[i]) as *const _ as usize;
        assert_eq!(rq(0) % LINE, 0, "rq 0 line-aligned");
        assert_eq!(rq(1) % LINE, 0, "rq 1 line-aligned");
        assert_ne!(line_of(rq(0)), line_of(rq(1)), "the rqs share a line");
        // The idle mask fills whole lines of its own inside `nohz`; the rest of `nohz` (the
        // scalar line) is at least one more line.
        let nohz = m.nohz() as *const _ as usize;
        let nohz_end = nohz + size_of_val(m.nohz());
        let mask = m.nohz().idle_cpus_mask() as *const _ as usize;
        let mask_size = size_of::<CpuMask<{ nohz::mask_words(CPUS) }>>();
        assert_eq!(mask % LINE, 0, "the idle mask starts a line");
        assert_eq!(mask_size % LINE, 0, "the idle mask fills whole lines");
        assert!(
            nohz_end - nohz >= mask_size + LINE,
            "the nohz scalars have a line beside the mask"
        );
        // The static key: one line of its own, outside every `nohz` line.
        let key = m.sched_clock_irqtime() as *const StaticKey as usize;
        assert_eq!(key % LINE, 0, "the static key starts a line");
        assert_eq!(size_of::<StaticKey>(), LINE, "the static key is one line");
        assert!(
            key + LINE <= nohz || key >= nohz_end,
            "the static key's line ({key:#x}) overlaps the nohz lines ({nohz:#x}..{nohz_end:#x})"
        );
        assert!(m.irqtime_enabled(), "irqtime was enabled at boot");
        // A pair registers and leaves again: it takes the full path every time.
        for i in 0..CPUS {
            m.nohz_balance_enter_idle(self.cpus[i], &*self.plat);
            assert!(m.nohz_idle_test(self.cpus[i]), "registered");
            assert!(!m.nohz_idle(self.cpus[i]), "no LLC to be counted idle in");
            m.nohz_balance_exit_idle(self.cpus[i], &*self.plat);
            assert!(!m.rq(self.cpus[i]).nohz_tick_stopped(), "left again");
        }
        assert_eq!(m.nohz_idle_cpus().count(), 0, "nobody registered");
        assert_eq!(
            m.warnings().total(m.nr_cpu_ids()),
            0,
            "no warning on the benched paths"
        );
    }

    /// One enter+exit pair on CPU `i` (`nohz_balance_enter_idle`, registering, then
    /// `nohz_balance_exit_idle`), the machine's address laundered through `black_box`.
    #[inline(always)]
    pub fn pair(&self, i: usize) {
        let m = black_box(&*self.m);
        m.nohz_balance_enter_idle(self.cpus[i], &*self.plat);
        m.nohz_balance_exit_idle(self.cpus[i], &*self.plat);
    }

    /// `irqtime_enabled()`: the static key under `Patched`, the flag in the `nohz` scalar line
    /// under `Legacy`.
    #[inline(always)]
    pub fn irqtime_read(&self) -> bool {
        black_box(&*self.m).irqtime_enabled()
    }
}

/// A word on a line of its own, for the "two bare locked RMWs" baseline of T2.
pub fn rmw_word() -> Box<CachePadded<AtomicU64>> {
    let w = black_box(Box::new(CachePadded::new(AtomicU64::new(0))));
    w.store(black_box(0), Relaxed);
    w
}

/// What T2 bounds a pair by: a `lock or` and a `lock and` on a private word (the result
/// unused, so no `cmpxchg` loop), as the mask bit's set and clear are.
#[inline(always)]
pub fn two_rmws(w: &AtomicU64) {
    let w = black_box(w);
    w.fetch_or(1, Relaxed);
    w.fetch_and(!1, Relaxed);
}

/// The 4096-bit masks of T6 and T7, both empty (a bit set and cleared at run time): the
/// crate's [`CpuMask`] and, for the naive scans, the same number of packed words.
pub struct Masks {
    /// The crate's mask.
    pub mask: Box<CpuMask<MASK_WORDS>>,
    /// Plain words for the naive scans.
    pub words: Box<CachePadded<[AtomicU64; MASK_WORDS]>>,
    /// `nr_cpu_ids` = 4096.
    pub nr: NrCpuIds<MASK_BITS>,
}

impl Masks {
    /// Both masks empty, every bit live.
    pub fn new() -> Self {
        let nr = black_box(NrCpuIds::<MASK_BITS>::full());
        let mask = black_box(Box::new(CpuMask::<MASK_WORDS>::new()));
        let words = black_box(Box::new(CachePadded::new(std::array::from_fn(|_| {
            AtomicU64::new(0)
        }))));
        let last = nr.cpu(MASK_BITS - 1).expect("bit 4095");
        mask.set(last);
        mask.clear(last);
        words[MASK_WORDS - 1].store(black_box(0), Relaxed);
        assert_eq!(
            words.as_ptr() as usize % LINE,
            0,
            "the naive words start a line"
        );
        assert!(mask_is_empty(&mask, nr) && naive_is_empty(&words, nr.get()));
        assert!(
            NAIVE_IS_EMPTY_COPIES
                .iter()
                .all(|copy| copy(&words, nr.get()))
        );
        assert!(mask_first(&mask, nr).is_none() && naive_first(&words, nr.get()).is_none());
        assert_eq!(mask_weight(&mask, nr), 0);
        Masks { mask, words, nr }
    }
}

/// `CpuMask::is_empty`, out of line so every variant pays one call.
#[inline(never)]
pub fn mask_is_empty(m: &CpuMask<MASK_WORDS>, nr: NrCpuIds<MASK_BITS>) -> bool {
    m.is_empty(nr)
}

/// `CpuMask::first`, out of line.
#[inline(never)]
pub fn mask_first(m: &CpuMask<MASK_WORDS>, nr: NrCpuIds<MASK_BITS>) -> Option<CpuId<MASK_BITS>> {
    m.first(nr)
}

/// `CpuMask::weight`, out of line.
#[inline(never)]
pub fn mask_weight(m: &CpuMask<MASK_WORDS>, nr: NrCpuIds<MASK_BITS>) -> usize {
    m.weight(nr)
}

/// T6's reference: the naive emptiness test, word by word, stopping at the first non-zero
/// word, bounded by `nr` bits.
#[inline(never)]
pub fn naive_is_empty(words: &[AtomicU64; MASK_WORDS], nr: usize) -> bool {
    naive_is_empty_body(words, nr)
}

#[inline(always)]
fn naive_is_empty_body(words: &[AtomicU64; MASK_WORDS], nr: usize) -> bool {
    let (full, tail) = (nr / 64, nr % 64);
    for w in &words[..full] {
        if w.load(Relaxed) != 0 {
            return false;
        }
    }
    tail == 0 || words[full].load(Relaxed) & ((1u64 << tail) - 1) == 0
}

/// How many copies of T6's naive loop the contention bench compiles, each at its own address.
pub const NAIVE_COPIES: usize = 4;

/// [`naive_is_empty`] compiled [`NAIVE_COPIES`] times. A loop of one load, one test and one
/// branch per word runs at one word per cycle or at half that speed depending on where it
/// lands in the binary (an alignment effect of the front end: up to 2x here between builds
/// of unchanged code). Each copy has a different length of prologue, so the copies are not
/// merged and their loops sit at different offsets.
pub const NAIVE_IS_EMPTY_COPIES: [fn(&[AtomicU64; MASK_WORDS], usize) -> bool; NAIVE_COPIES] = [
    naive_is_empty_copy::<0>,
    naive_is_empty_copy::<1>,
    naive_is_empty_copy::<2>,
    naive_is_empty_copy::<3>,
];

#[inline(never)]
fn naive_is_empty_copy<const K: usize>(words: &[AtomicU64; MASK_WORDS], nr: usize) -> bool {
    for i in 0..K {
        black_box(i);
    }
    naive_is_empty_body(words, nr)
}

/// The naive first set bit below `nr`, word by word (T7's reference).
#[inline(never)]
pub fn naive_first(words: &[AtomicU64; MASK_WORDS], nr: usize) -> Option<usize> {
    let (full, tail) = (nr / 64, nr % 64);
    for (i, w) in words[..full].iter().enumerate() {
        let v = w.load(Relaxed);
        if v != 0 {
            return Some(i * 64 + v.trailing_zeros() as usize);
        }
    }
    let v = if tail == 0 {
        0
    } else {
        words[full].load(Relaxed) & ((1u64 << tail) - 1)
    };
    (v != 0).then(|| full * 64 + v.trailing_zeros() as usize)
}
