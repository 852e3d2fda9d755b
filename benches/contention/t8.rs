//! T8 (spec `sharded-idle.md` §4): the `Sharded` policy's idle set on this machine's two
//! cores, each core its own shard, against the flat mask, with the spec's controls, every
//! variant of a target in one interleaving.
//!
//! - **T8a / T8d (pairs).** One interleaving of four variants, each a pair on CPU 0 while the
//!   antagonist runs the same kind of pair on CPU 1: `sticky-quiet` (the antagonist spins on
//!   nothing shared), `sticky` (CPU 1 in the other shard), `flat` (`Scalable`: the one idle
//!   mask) and `exact` (the rejected exact summary, set on a shard's 0 -> 1 and cleared on
//!   1 -> 0 with its fence and re-check: bench-local code, the negative control that shows the
//!   bench would catch a summary written at transition rate).
//! - **T8b (the layout control).** An interleaving of its own, judged `paced`: `same-shard`
//!   (`Sharded` with both CPUs in one shard: the same code in the flat layout, which must
//!   cost what the flat pair costs, showing that the gain is the layout, not the code),
//!   `flat`, and two reported controls: `flat-again` (more `Scalable` machines, the same code
//!   on lines at other addresses: the A/A, what is left of the noise) and `flat-plus-work`
//!   (the flat pair followed by a few nanoseconds of private arithmetic: what code that moves
//!   exactly the same lines but runs a little longer does to a contended pair).
//!   `ci/guards.sh`'s T8f proves that the same-shard and flat pairs move the same lines, so
//!   what T8b can show beyond that is timing, and three things other than the code moved it
//!   here, each handled:
//!   - *Where the line lies.* One machine's contended pair costs up to about a fifth more or
//!     less than another's, the same code on other addresses, the same in every interleaving
//!     of a process; so each variant pools its runs over [`MACHINES_PER_VARIANT`] machines.
//!   - *The host's rhythm.* With the variants in a fixed order each round, slots locked onto
//!     a periodic host event; the interleaving now draws each round's order afresh.
//!   - *The loop's rhythm.* Back-to-back pairs on one contended line settle into a rhythm
//!     with the other core (one or two transfers a pair) that a few nanoseconds of private
//!     work flip either way: tight, `flat-plus-work` measured 0.57-1.45 of `flat` over ten
//!     rounds (adding work made the pair cheaper), the A/A 0.75-1.02; paced, 0.96-1.17 and
//!     0.92-1.04. Hence the `paced` verdict: the `lfence` before each pair breaks the rhythm.
//! - **T8c / T8d (the tick's test).** The due tick's "anyone tickless?" test on CPU 0
//!   (`Machine::nohz_anyone_tickless`), about 300 ns of private work and `lfence`s around each
//!   call (the `worked` pacing), over an empty function, while CPU 1 runs pairs of the same
//!   design: `Hint` (bounded), `Validated` (reported: with one CPU per shard it must read the
//!   churning shard), the flat mask and the exact summary (the negative control).
//! - **T8e (the quiet price).** The sticky pair against the flat (`Scalable`) pair with no
//!   antagonist: what the shard lookup and the summary's read-before-write cost when no line
//!   moves (the instruction-count half of T8e is `ci/guards.sh`'s). The same-shard pair is
//!   reported beside it: the same code, so its ratio separates the code's price from the
//!   layout's.

use crate::common::Rig;
use crate::report::Target;
use crate::{BATCH_PAIRS, BATCH_WORKED, Round, pairs_on_cpu1, timed_pairs};
use nohz::beyond::sharded::{Contiguous, LowestId, Validated};
use nohz::sync::{NOHZ_ENTER_IDLE_FENCE, NOHZ_SHARD_GC_FENCE};
use nohz::{CachePadded, Policy, Scalable, Sharded};
use nohz_stress::measure::{Churn, Interleaved, InterleavedMany, churn};
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Each core its own shard (the shipped `Hint` mode).
pub type Sticky = Sharded<2, Contiguous<1>>;
/// Both cores in one shard: the same code, the flat layout.
pub type SameShard = Sharded<1, Contiguous<2>>;
/// Each core its own shard, the `Validated` emptiness test.
pub type StickyValidated = Sharded<2, Contiguous<1>, LowestId, Validated>;

/// The rejected exact summary (spec §2.4), laid out as the sticky design: one shard word per
/// core on a line of its own, the summary on a line of its own.
pub struct Exact {
    words: [CachePadded<AtomicU64>; 2],
    summary: CachePadded<AtomicU64>,
}

impl Exact {
    fn new() -> Arc<Self> {
        black_box(Arc::new(Exact {
            words: [const { CachePadded::new(AtomicU64::new(0)) }; 2],
            summary: CachePadded::new(AtomicU64::new(0)),
        }))
    }

    /// CPU `i` (alone in shard `i`) enters and leaves: every operation is a transition, so
    /// the summary is set and cleared (with the fence and re-check it needs) every time.
    #[inline(always)]
    fn pair(&self, i: usize) {
        let me = black_box(self);
        if me.words[i].fetch_or(1, Relaxed) == 0 {
            NOHZ_ENTER_IDLE_FENCE.fence_after_rmw();
            me.summary.fetch_or(1 << i, Relaxed);
        }
        if me.words[i].fetch_and(!1, Relaxed) == 1 {
            me.summary.fetch_and(!(1 << i), Relaxed);
            NOHZ_SHARD_GC_FENCE.fence();
            if me.words[i].load(Relaxed) != 0 {
                me.summary.fetch_or(1 << i, Relaxed);
            }
        }
    }

    /// The tick's test: one load of the summary.
    #[inline(always)]
    fn anyone(&self) -> bool {
        black_box(self).summary.load(Relaxed) != 0
    }
}

/// The antagonist's nothing: CPU 1 spins without touching a shared line (the quiet variant
/// inside a contended interleaving).
fn nothing_on_cpu1() -> Arc<dyn Churn> {
    churn(|| {
        black_box(0u64);
    })
}

fn exact_pairs_on_cpu1(e: &Arc<Exact>) -> Arc<dyn Churn> {
    let e = Arc::clone(e);
    churn(move || e.pair(1))
}

/// Measures and prints T8a's lines and T8d's pair line: one interleaving of the four pairs.
pub fn run_pairs(round: &Round<'_>, t: &Target) {
    let [quiet, flat, exact] = t.checks();
    let s = round.session;
    let sticky = Arc::new(Rig::<Sticky>::new());
    let scalable = Arc::new(Rig::<Scalable>::new());
    let ex = Exact::new();
    assert_eq!(sticky.m.nr_shards(), 2, "each core its own shard");
    let jobs: [Arc<dyn Churn>; 4] = [
        nothing_on_cpu1(),
        pairs_on_cpu1(&sticky),
        pairs_on_cpu1(&scalable),
        exact_pairs_on_cpu1(&ex),
    ];
    for pacing in t.pacings() {
        let r = s.interleave_contended(&jobs, |v| match v {
            0 | 1 => timed_pairs(s, &sticky, pacing),
            2 => timed_pairs(s, &scalable, pacing),
            _ => s.timed(BATCH_PAIRS, pacing, || ex.pair(0)),
        });
        let also = pacing != t.primary;
        quiet.print_as(&r.pair(1, 0), None, pacing, also, Some(s.lost()));
        flat.print_as(&r.pair(1, 2), None, pacing, also, None);
        exact.print_as(&r.pair(3, 1), None, pacing, also, None);
    }
}

/// Dependent multiplies after `flat-plus-work`'s pair: a few nanoseconds of private work.
const PLUS_WORK: u32 = 4;

/// [`PLUS_WORK`] dependent multiplies, nothing shared.
#[inline(always)]
fn private_work() {
    let mut x = black_box(1u64);
    for _ in 0..PLUS_WORK {
        x = black_box(x.wrapping_mul(3));
    }
    black_box(x);
}

/// Machines per T8b variant: what a contended pair costs differs from one machine to the next
/// by up to about a fifth here, the same code on lines at other addresses, so every T8b
/// variant pools its runs over this many machines of its own.
const MACHINES_PER_VARIANT: usize = 4;

/// The runs of the variants `a` and `b` of `r`, each pooled over its machines (variant `v`'s
/// machines are the [`MACHINES_PER_VARIANT`] interleaved variants from `v` times that on).
fn pooled(r: &InterleavedMany<f64>, a: usize, b: usize) -> Interleaved<f64> {
    let runs = |v: usize| {
        let machines = v * MACHINES_PER_VARIANT..(v + 1) * MACHINES_PER_VARIANT;
        (
            machines
                .clone()
                .flat_map(|i| r.kept[i].iter().copied())
                .collect(),
            machines.map(|i| r.discarded[i]).sum(),
        )
    };
    let ((a, da), (b, db)) = (runs(a), runs(b));
    Interleaved {
        a,
        b,
        discarded: (da, db),
    }
}

/// Measures and prints T8b's lines: the same-shard pair, a second set of flat machines' pairs
/// (the A/A) and the flat pair plus private work, each over the flat pair, in one
/// interleaving, each variant over [`MACHINES_PER_VARIANT`] machines of its own.
pub fn run_control(round: &Round<'_>, t: &Target) {
    let [same, again, plus_work] = t.checks();
    let s = round.session;
    let machines = || -> [Arc<Rig<Scalable>>; MACHINES_PER_VARIANT] {
        std::array::from_fn(|_| Arc::new(Rig::new()))
    };
    let same_shard: [Arc<Rig<SameShard>>; MACHINES_PER_VARIANT] =
        std::array::from_fn(|_| Arc::new(Rig::new()));
    let (scalable, scalable_again, scalable_work) = (machines(), machines(), machines());
    assert!(
        same_shard.iter().all(|r| r.m.nr_shards() == 1),
        "both cores in one shard"
    );
    let jobs: Vec<Arc<dyn Churn>> = (same_shard.iter().map(pairs_on_cpu1))
        .chain(scalable.iter().map(pairs_on_cpu1))
        .chain(scalable_again.iter().map(pairs_on_cpu1))
        .chain(scalable_work.iter().map(pairs_on_cpu1))
        .collect();
    for pacing in t.pacings() {
        let r = s.interleave_contended(&jobs, |v| {
            let i = v % MACHINES_PER_VARIANT;
            match v / MACHINES_PER_VARIANT {
                0 => timed_pairs(s, &same_shard[i], pacing),
                1 => timed_pairs(s, &scalable[i], pacing),
                2 => timed_pairs(s, &scalable_again[i], pacing),
                _ => s.timed(BATCH_PAIRS, pacing, || {
                    scalable_work[i].pair(0);
                    private_work();
                }),
            }
        });
        let also = pacing != t.primary;
        same.print_as(&pooled(&r, 0, 1), None, pacing, also, Some(s.lost()));
        again.print_as(&pooled(&r, 2, 1), None, pacing, also, None);
        plus_work.print_as(&pooled(&r, 3, 1), None, pacing, also, None);
    }
}

/// The due tick's test on CPU 0 of `rig`.
#[inline(never)]
fn anyone<P: Policy>(rig: &Rig<P>) -> bool {
    black_box(&*rig.m).nohz_anyone_tickless(rig.cpus[0])
}

/// The empty function the tick's test is measured against.
#[inline(never)]
fn empty() -> bool {
    black_box(true)
}

/// Measures and prints T8c's lines and T8d's tick line: one interleaving of the four tests
/// and the empty function under the same kind of churn as each.
pub fn run_tick(round: &Round<'_>, t: &Target) {
    let [hint, validated, flat, exact] = t.checks();
    let s = round.session;
    let sticky = Arc::new(Rig::<Sticky>::new());
    let strict = Arc::new(Rig::<StickyValidated>::new());
    let scalable = Arc::new(Rig::<Scalable>::new());
    let ex = Exact::new();
    // CPU 1 registered once, so that every sharded test answers from a flagged shard.
    sticky.pair(1);
    strict.pair(1);
    scalable.pair(1);
    let jobs: [Arc<dyn Churn>; 8] = [
        pairs_on_cpu1(&sticky),
        pairs_on_cpu1(&sticky),
        pairs_on_cpu1(&strict),
        pairs_on_cpu1(&strict),
        pairs_on_cpu1(&scalable),
        pairs_on_cpu1(&scalable),
        exact_pairs_on_cpu1(&ex),
        exact_pairs_on_cpu1(&ex),
    ];
    for pacing in t.pacings() {
        let r = s.interleave_contended(&jobs, |v| match v {
            0 => s.timed(BATCH_WORKED, pacing, || anyone(&sticky)),
            2 => s.timed(BATCH_WORKED, pacing, || anyone(&strict)),
            4 => s.timed(BATCH_WORKED, pacing, || anyone(&scalable)),
            6 => s.timed(BATCH_WORKED, pacing, || ex.anyone()),
            _ => s.timed(BATCH_WORKED, pacing, empty),
        });
        let also = pacing != t.primary;
        hint.print_as(&r.pair(0, 1), None, pacing, also, Some(s.lost()));
        validated.print_as(&r.pair(2, 3), None, pacing, also, None);
        flat.print_as(&r.pair(4, 5), None, pacing, also, None);
        exact.print_as(&r.pair(6, 7), None, pacing, also, None);
    }
}

/// Measures and prints T8e's lines: the sticky and the same-shard pair, each interleaved with
/// the flat pair, nothing running on the other core.
pub fn run_quiet(round: &Round<'_>, t: &Target) {
    let [sticky_over_flat, same_over_flat] = t.checks();
    let s = round.session;
    let sticky = Rig::<Sticky>::new();
    let same_shard = Rig::<SameShard>::new();
    let scalable = Rig::<Scalable>::new();
    sticky_over_flat.report(s, t.pacings(), |pacing| {
        s.interleave_quiet(
            || timed_pairs(s, &sticky, pacing),
            || timed_pairs(s, &scalable, pacing),
        )
    });
    same_over_flat.report(s, t.pacings(), |pacing| {
        s.interleave_quiet(
            || timed_pairs(s, &same_shard, pacing),
            || timed_pairs(s, &scalable, pacing),
        )
    });
}
