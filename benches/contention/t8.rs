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
//! - **T8g (the cost model).** Each pair design under churn against the spec's cost model,
//!   `quiet + n_x * t_x`, in one interleaving: the design's pair quiet (the antagonist spinning
//!   on nothing shared), `n_x` the transfers per pair that `ci/guards.sh`'s T8f counts with
//!   whole pairs alternating ([`TRANSFERS_PER_PAIR`]), `t_x` half the median round trip of a
//!   line handed between the two threads ([`PingPong`]) in the same interleaving. Bounded at
//!   0.7-1.3 for the flat, sticky, same-shard and exact pairs; judged paced (a tight loop
//!   overlaps what the model adds up), each variant pooled over [`MACHINES_PER_VARIANT`]
//!   machines.
//! - **T8h (the ILB walk).** What sharding costs the one path that reads every shard: the
//!   ILB's walk over the idle set, on four logical CPUs, CPU 0 walking, CPU 2 idle throughout,
//!   the antagonist pairing CPUs 1 and 3 in turn. Under `Sharded` (two shards of two: CPU 1
//!   in CPU 0's shard, CPU 3 in CPU 2's) it dirties both shard lines, under the flat mask the
//!   one mask line. Two lines: the walk alone (`Machine::nohz_idle_cpus`, which reads every
//!   shard word as the ILB pass's walk does), bounded at 2.5 times the flat walk (two lines
//!   read against one), and the walk with a fixed 2 us of work per CPU it visits (a stand-in
//!   for each CPU's `update_nohz_stats` and rebalance), at 1.05 times. Judged paced, each
//!   variant pooled over [`MACHINES_PER_VARIANT`] machines.
//! - **T8e (the quiet price).** The sticky pair against the flat (`Scalable`) pair with no
//!   antagonist: what the shard lookup and the summary's read-before-write cost when no line
//!   moves (the instruction-count half of T8e is `ci/guards.sh`'s). The same-shard pair is
//!   reported beside it: the same code, so its ratio separates the code's price from the
//!   layout's. Each design runs [`PAIR_COPIES`] copies of its loop, each at its own address,
//!   and is judged by its fastest (see [`timed_pairs_copy`]).

use crate::common::{Rig, START};
use crate::report::{Check, Target};
use crate::transfer::{self, PingPong};
use crate::{BATCH_PAIRS, BATCH_WORKED, Round, pairs_on_cpu1, placed, timed_pairs};
use nohz::internals::NOHZ_SHARD_GC_FENCE;
use nohz::sharded::{Contiguous, LowestId, Validated};
use nohz::sync::NOHZ_ENTER_IDLE_FENCE;
use nohz::{CachePadded, CpuId, Jiffies, Policy, Scalable, Sharded};
use nohz_stress::measure::{
    Churn, Interleaved, InterleavedMany, Pacing, Session, churn, median, work,
};
use nohz_testing::{HostPlatform, World};
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
    let sticky = placed::placements(Rig::<Sticky>::new);
    let scalable = placed::placements(Rig::<Scalable>::new);
    let ex: Vec<Arc<Exact>> = (0..placed::PLACEMENTS).map(|_| Exact::new()).collect();
    assert!(
        sticky.iter().all(|r| r.m.nr_shards() == 2),
        "each core its own shard"
    );
    let jobs: [Vec<Arc<dyn Churn>>; 4] = [
        sticky.iter().map(|_| nothing_on_cpu1()).collect(),
        sticky.iter().map(pairs_on_cpu1).collect(),
        scalable.iter().map(pairs_on_cpu1).collect(),
        ex.iter().map(exact_pairs_on_cpu1).collect(),
    ];
    for pacing in t.pacings() {
        let r = placed::interleave(s, &jobs, |v, k| match v {
            0 | 1 => timed_pairs(s, &sticky[k], pacing),
            2 => timed_pairs(s, &scalable[k], pacing),
            _ => s.timed(BATCH_PAIRS, pacing, || ex[k].pair(0)),
        });
        let also = pacing != t.primary;
        quiet.print_as(&r.pair(1, 0), None, pacing, also, Some(s.lost()));
        flat.print_as(&r.pair(1, 2), None, pacing, also, None);
        exact.print_as(&r.pair(3, 1), None, pacing, also, None);
        let names = ["sticky-quiet", "sticky", "flat", "exact"];
        placed::print_means(quiet.target, quiet.name, pacing, &names, &r);
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

/// How many copies of each T8e pair loop the bench compiles, each at its own address.
const PAIR_COPIES: usize = 4;

/// [`timed_pairs`] compiled once per `K`, each copy with a prologue of its own length, so that
/// the copies are not merged and their loops sit at different offsets in the binary. A quiet
/// pair of 4-5 ns moves by up to a quarter with where its loop lands: the same `Sharded` code
/// measured 1.03, 1.08 and 1.20-1.29 of the flat pair in three builds that changed only other
/// code of the bench.
#[inline(never)]
fn timed_pairs_copy<P: Policy, const K: usize>(
    s: &Session<'_>,
    rig: &Rig<P>,
    pacing: Pacing,
) -> f64 {
    for i in 0..K {
        black_box(i);
    }
    s.timed(BATCH_PAIRS, pacing, || rig.pair(0))
}

/// Copy `k` of [`timed_pairs_copy`] for `rig`.
fn timed_pairs_at<P: Policy>(k: usize, s: &Session<'_>, rig: &Rig<P>, pacing: Pacing) -> f64 {
    const _: () = assert!(PAIR_COPIES == 4, "one match arm per copy");
    match k {
        0 => timed_pairs_copy::<P, 0>(s, rig, pacing),
        1 => timed_pairs_copy::<P, 1>(s, rig, pacing),
        2 => timed_pairs_copy::<P, 2>(s, rig, pacing),
        _ => timed_pairs_copy::<P, 3>(s, rig, pacing),
    }
}

/// Measures and prints T8e's lines: the sticky and the same-shard pair over the flat pair,
/// nothing running on the other core, in one interleaving of [`PAIR_COPIES`] copies of each
/// design's loop; each design is judged by its fastest copy, so that the ratio prices the code
/// and not where a build happened to put it (stderr has every copy's median).
pub fn run_quiet(round: &Round<'_>, t: &Target) {
    let [sticky_over_flat, same_over_flat] = t.checks();
    let s = round.session;
    let sticky = Rig::<Sticky>::new();
    let same_shard = Rig::<SameShard>::new();
    let scalable = Rig::<Scalable>::new();
    const NAMES: [&str; 3] = ["sticky", "same-shard", "flat"];
    for pacing in t.pacings() {
        let r = s.interleave_many(3 * PAIR_COPIES, |v| {
            let k = v % PAIR_COPIES;
            s.quiet(|| match v / PAIR_COPIES {
                0 => timed_pairs_at(k, s, &sticky, pacing),
                1 => timed_pairs_at(k, s, &same_shard, pacing),
                _ => timed_pairs_at(k, s, &scalable, pacing),
            })
        });
        // Each design's fastest copy.
        let fastest: Vec<usize> = (0..NAMES.len())
            .map(|d| {
                let copies = d * PAIR_COPIES..(d + 1) * PAIR_COPIES;
                let at = |v: usize| median(&r.kept[v]).unwrap_or(f64::INFINITY);
                let best = copies
                    .clone()
                    .min_by(|&a, &b| at(a).total_cmp(&at(b)))
                    .unwrap_or(copies.start);
                let all: Vec<String> = copies.map(|v| format!("{:.2}", at(v))).collect();
                eprintln!(
                    "T8e {} {} ({} copies): {} ns; the fastest is copy {}",
                    sticky_over_flat.name,
                    pacing.name(),
                    NAMES[d],
                    all.join(", "),
                    best - d * PAIR_COPIES
                );
                best
            })
            .collect();
        let also = pacing != t.primary;
        let flat = fastest[2];
        sticky_over_flat.print_as(&r.pair(fastest[0], flat), None, pacing, also, None);
        same_over_flat.print_as(&r.pair(fastest[1], flat), None, pacing, also, None);
    }
}

/// T8h's walking machine: four logical CPUs (the two cores each play two).
type WalkMachine<P> = nohz::machine!(P, 4);

/// T8h's sharded layout: two shards of two CPUs, `{0, 1}` and `{2, 3}`.
pub type WalkSharded = Sharded<2, Contiguous<2>>;

/// A machine of four logical CPUs for T8h, CPU 2 idle throughout.
struct WalkRig<P: Policy> {
    m: Arc<WalkMachine<P>>,
    plat: Arc<HostPlatform<4>>,
    cpus: [CpuId<4>; 4],
}

impl<P: Policy> WalkRig<P> {
    fn new() -> Arc<Self> {
        let World { m, p: plat } =
            World::<P, 4, { nohz::mask_words(4) }>::booted(4, Jiffies::new(START));
        let (m, plat) = (black_box(m), black_box(plat));
        plat.set_llc_size(1);
        m.rebuild_sched_domains(&*plat)
            .expect("one LLC per CPU is a valid topology");
        let nr = m.nr_cpu_ids();
        let cpus = [0, 1, 2, 3].map(|i| nr.cpu(i).expect("the machine has 4 CPUs"));
        m.nohz_balance_enter_idle(cpus[2], &*plat);
        let rig = WalkRig { m, plat, cpus };
        assert_eq!(
            rig.m.nohz_idle_cpus().collect::<Vec<_>>(),
            [cpus[2]],
            "CPU 2 alone is idle"
        );
        rig.pair(1);
        rig.pair(3);
        assert_eq!(rig.walk(|| ()), 1, "the pairs left only CPU 2 idle");
        assert_eq!(
            rig.m.warnings().total(nr),
            0,
            "no warning on the benched paths"
        );
        Arc::new(rig)
    }

    #[inline(always)]
    fn pair(&self, i: usize) {
        let m = black_box(&*self.m);
        m.nohz_balance_enter_idle(self.cpus[i], &*self.plat);
        m.nohz_balance_exit_idle(self.cpus[i], &*self.plat);
    }

    /// The ILB's reading of the idle set, `visit` for each CPU in it; the CPUs visited.
    #[inline(always)]
    fn walk(&self, mut visit: impl FnMut()) -> usize {
        black_box(&*self.m)
            .nohz_idle_cpus()
            .map(|cpu| {
                black_box(cpu);
                visit();
            })
            .count()
    }
}

/// The antagonist of T8h: pairs of CPU 1 and of CPU 3 in turn.
fn walk_churn<P: Policy>(rig: &Arc<WalkRig<P>>) -> Arc<dyn Churn> {
    let rig = Arc::clone(rig);
    churn(move || {
        rig.pair(1);
        rig.pair(3);
    })
}

/// The per-visited-CPU work of T8h's second line.
const VISIT_NS: f64 = 2000.0;

/// Measures and prints T8h's lines: the sharded and the flat walk, alone and with the visits'
/// work, in one interleaving, each variant over [`MACHINES_PER_VARIANT`] machines.
pub fn run_walk(round: &Round<'_>, t: &Target) {
    let [alone, with_work] = t.checks();
    let s = round.session;
    let sharded: [Arc<WalkRig<WalkSharded>>; MACHINES_PER_VARIANT] =
        std::array::from_fn(|_| WalkRig::new());
    let flat: [Arc<WalkRig<Scalable>>; MACHINES_PER_VARIANT] =
        std::array::from_fn(|_| WalkRig::new());
    assert!(
        sharded.iter().all(|r| r.m.nr_shards() == 2),
        "two shards of two"
    );
    let steps = (VISIT_NS / s.work().step_ns).round() as u64;
    let visit = || {
        black_box(work(black_box(1), steps));
    };
    // Variants: the sharded walk, the flat walk, then both with the visits' work; each
    // variant's machines in turn, each machine's antagonist the same for both of its variants.
    let jobs: Vec<Arc<dyn Churn>> = (0..2)
        .flat_map(|_| {
            let sharded = sharded.iter().map(walk_churn);
            sharded
                .chain(flat.iter().map(walk_churn))
                .collect::<Vec<_>>()
        })
        .collect();
    for pacing in t.pacings() {
        let r = s.interleave_contended(&jobs, |v| {
            let i = v % MACHINES_PER_VARIANT;
            match v / MACHINES_PER_VARIANT {
                0 => s.timed(BATCH_PAIRS, pacing, || sharded[i].walk(|| ())),
                1 => s.timed(BATCH_PAIRS, pacing, || flat[i].walk(|| ())),
                2 => s.timed(BATCH_WALKS, pacing, || sharded[i].walk(visit)),
                _ => s.timed(BATCH_WALKS, pacing, || flat[i].walk(visit)),
            }
        });
        let also = pacing != t.primary;
        alone.print_as(&pooled(&r, 0, 1), None, pacing, also, Some(s.lost()));
        with_work.print_as(&pooled(&r, 2, 3), None, pacing, also, None);
    }
}

/// Walks with [`VISIT_NS`] of work per visited CPU timed per batch: a batch of about 100 us.
const BATCH_WALKS: u64 = 48;

/// T8g's designs, in the order of its lines.
const MODEL_DESIGNS: usize = 4;

/// Transfers per CPU-0 pair with whole pairs alternating, as T8f counts them: flat 1, sticky 0,
/// same-shard 1 (as flat), exact 1 (its summary line moves as the flat mask's does).
/// `ci/guards.sh` fails if flat, sticky or same-shard change; for the exact summary it checks
/// only that it moves at least one line, and prints the count (1.00 in every run so far).
const TRANSFERS_PER_PAIR: [f64; MODEL_DESIGNS] = [1.0, 0.0, 1.0, 1.0];

/// One pair design of T8g on its machines: the pair on CPU 0, the antagonist's own pairs.
enum Design {
    Flat(Arc<Rig<Scalable>>),
    Sticky(Arc<Rig<Sticky>>),
    Same(Arc<Rig<SameShard>>),
    Exact(Arc<Exact>),
}

impl Design {
    /// Design `d` (the order of [`TRANSFERS_PER_PAIR`]) on a machine of its own.
    fn new(d: usize) -> Self {
        match d {
            0 => Design::Flat(Arc::new(Rig::new())),
            1 => Design::Sticky(Arc::new(Rig::new())),
            2 => Design::Same(Arc::new(Rig::new())),
            _ => Design::Exact(Exact::new()),
        }
    }

    fn churn(&self) -> Arc<dyn Churn> {
        match self {
            Design::Flat(r) => pairs_on_cpu1(r),
            Design::Sticky(r) => pairs_on_cpu1(r),
            Design::Same(r) => pairs_on_cpu1(r),
            Design::Exact(e) => exact_pairs_on_cpu1(e),
        }
    }

    fn timed(&self, s: &Session<'_>, pacing: Pacing) -> f64 {
        match self {
            Design::Flat(r) => timed_pairs(s, r, pacing),
            Design::Sticky(r) => timed_pairs(s, r, pacing),
            Design::Same(r) => timed_pairs(s, r, pacing),
            Design::Exact(e) => s.timed(BATCH_PAIRS, pacing, || e.pair(0)),
        }
    }
}

/// Measures and prints T8g's lines: each design's pair under churn over the model's
/// prediction from its quiet pair and the round trip, all in one interleaving.
pub fn run_model(round: &Round<'_>, t: &Target) {
    let checks: &[Check; MODEL_DESIGNS] = t.checks();
    let s = round.session;
    // Variant groups: design d quiet is group 2d, under churn 2d + 1, each over its
    // machines; the round trip is the last variant.
    let designs: Vec<[Design; MACHINES_PER_VARIANT]> = (0..MODEL_DESIGNS)
        .map(|d| std::array::from_fn(|_| Design::new(d)))
        .collect();
    let ping = Arc::new(PingPong::default());
    let mut jobs: Vec<Arc<dyn Churn>> = Vec::new();
    for machines in &designs {
        jobs.extend(machines.iter().map(|_| nothing_on_cpu1()));
        jobs.extend(machines.iter().map(Design::churn));
    }
    jobs.push(ping.job());
    let round_trip = jobs.len() - 1;
    for pacing in t.pacings() {
        let r = s.interleave_contended(&jobs, |v| {
            if v == round_trip {
                return s.timed(BATCH_ROUND_TRIPS, pacing, || ping.round_trip());
            }
            let (group, i) = (v / MACHINES_PER_VARIANT, v % MACHINES_PER_VARIANT);
            designs[group / 2][i].timed(s, pacing)
        });
        let t_x = median(&r.kept[round_trip]).unwrap_or(f64::NAN) / 2.0;
        let also = pacing != t.primary;
        for (d, check) in checks.iter().enumerate() {
            // The design under churn, and each of its quiet runs plus the transfers.
            let runs = pooled(&r, 2 * d + 1, 2 * d);
            let model = Interleaved {
                b: (runs.b.iter())
                    .map(|quiet| quiet + TRANSFERS_PER_PAIR[d] * t_x)
                    .collect(),
                ..runs
            };
            let lost = (d == 0).then(|| s.lost());
            check.print_as(&model, None, pacing, also, lost);
        }
        transfer::print(
            checks[0].target,
            checks[0].name,
            pacing,
            &r.kept[round_trip],
        );
    }
}

/// Round trips timed per batch.
const BATCH_ROUND_TRIPS: u64 = 256;
