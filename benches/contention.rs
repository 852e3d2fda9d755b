//! The performance targets of spec/performance.md, each a ratio of two variants measured in one
//! process: `cargo bench --bench contention`.
//!
//! Not criterion: the contended targets need a second thread pinned to the other core (the
//! antagonist) running before and during every timed run, both threads' CPU time read around
//! each run, and runs in which either thread was descheduled thrown away; criterion times one
//! closure on one thread. So this is a plain `main` (`harness = false`) on the harness's
//! measurement machinery (`nohz_stress::measure`): variants interleaved A B A B ..., [`RUNS`]
//! kept runs of about 2 ms each, ratios of medians, the per-thread on-CPU gate at
//! [`MIN_ON_CPU`].
//!
//! # Output
//!
//! stdout: `#` lines (the set-up, skipped targets), then exactly one line per target check:
//!
//! ```text
//! T<n> <name> <a>/<b> ratio=<median> runs=<n> target=<bound> pass|fail
//! ```
//!
//! `ratio` is median(A) / median(B), except where `b` is `ns`: then it is median(A) in
//! nanoseconds. `runs` is the runs kept for the variant with fewer. Under each target line an
//! indented `also` line gives the same check with the other pacing (informational: tight
//! loops let out-of-order execution overlap the misses of consecutive calls; an `lfence`
//! before each call shows the per-event cost). T5b is judged `worked`: each call between
//! about 300 ns of private work and `lfence`s, as a tick's kick sits between other work.
//! Medians in nanoseconds, discarded runs and who was descheduled go to stderr.
//!
//! `-- T1 T3` runs only the targets named. `-- --cores A,B` puts the measuring thread on CPU
//! `A` and the antagonist on CPU `B` (the first two usable CPUs by default): on a many-core
//! machine, what the contended targets cost depends on what the two CPUs share. `-- --rounds
//! N` runs the table `N` times (the host's conditions move between rounds; see the README's
//! "three placements") and ends with one line per distinct table line:
//!
//! ```text
//! summary <line head> <a>/<b> n=<rounds> min=<v> median=<v> max=<v> target=<bound> held=<k>/<n>
//! ```
//!
//! T1 and T3 also print indented `floor` lines (the `mask-only` pair over `Legacy`'s: whether
//! any design with one shared idle mask could meet the bound in that interleaving), and T5a's
//! `Scalable` row one for the one-word deadline test alone over the empty function; in the
//! summary those `Scalable` lines end with `held-where-floor-reachable=<k>/<m>`: of the `m`
//! rounds in which their floor met the bound, the `k` in which they did too. T1, T3
//! and T4 print `transfer` lines: the round trip of one line handed between the two threads,
//! measured as one more variant of the same interleaving, in ns. The host moves the two
//! vCPUs between placements (round trips of about 70, 100 and 400 ns here), and what a
//! contended line costs, so what `Legacy`'s second line adds, depends on which.
//!
//! T1 has a `Scalable` row; T3 is `Scalable`'s; T5b has rows for `Scalable` and (for
//! comparison) `Patched`. T5a has a timing row here (quiet, `Scalable` and for comparison
//! `Patched`), but what gates CI is its instruction count in `ci/guards.sh`, as T10 is a
//! counting guard there too.

mod common;

use common::{Masks, Rig};
use common::{
    NAIVE_COPIES, NAIVE_IS_EMPTY_COPIES, mask_first, mask_is_empty, naive_first, rmw_word, two_rmws,
};
use nohz::{CachePadded, Legacy, Patched, Policy, Scalable};
use nohz_stress::measure::{
    Antagonist, Churn, Interleaved, MIN_ON_CPU, Pacing, RUN_FOR, Session, WORK_NS, Work, churn,
    median,
};
use std::fmt;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Kept runs per variant (the spec asks for at least 11).
const RUNS: usize = 41;

/// Kept runs per variant when the binary runs as a test (`cargo test --benches`, which does
/// not pass `--bench`): a smoke run of the set-up and its layout checks, not a measurement.
const SMOKE_RUNS: usize = 2;

/// Operations between two clock reads: a batch lasts a few microseconds at least, so reading
/// the clock costs under 1 % of a run.
const BATCH_PAIRS: u64 = 256;
/// See [`BATCH_PAIRS`]; reads of one word.
const BATCH_READS: u64 = 16_384;
/// See [`BATCH_PAIRS`]; mask scans.
const BATCH_SCANS: u64 = 1024;
/// See [`BATCH_PAIRS`]; calls with about 300 ns of work each.
const BATCH_WORKED: u64 = 64;

fn main() {
    let args = <Args as clap::Parser>::parse();
    let rounds = usize::try_from(args.rounds).unwrap_or(1);
    let runs = if args.bench {
        RUNS
    } else {
        println!("# smoke run (no --bench): {SMOKE_RUNS} runs per variant, numbers meaningless");
        SMOKE_RUNS
    };
    let all = core_affinity::get_core_ids().unwrap_or_default();
    // The measuring thread's core and the antagonist's: the first two, or the ones asked for.
    let cores: Vec<core_affinity::CoreId> = match args.cores {
        None => all.iter().copied().take(2).collect(),
        Some(pair) => {
            let pick = |id: usize| all.iter().copied().find(|c| c.id == id);
            match (pick(pair.0), pick(pair.1)) {
                (Some(a), Some(b)) => vec![a, b],
                _ => {
                    let ids: Vec<String> = all.iter().map(|c| c.id.to_string()).collect();
                    eprintln!(
                        "contention: --cores {},{}: this process may run on CPUs {} only",
                        pair.0,
                        pair.1,
                        ids.join(",")
                    );
                    std::process::exit(2);
                }
            }
        }
    };
    let main_pinned = cores
        .first()
        .is_some_and(|&c| core_affinity::set_for_current(c));
    let work = Work::calibrate();
    let (steps, step_ns) = (work.steps, work.step_ns);
    println!(
        "# nohz contention bench: {} CPU(s) usable; measuring thread on CPU {} ({}); {runs} kept \
         runs of {} ms per variant, interleaved; a run counts only if each thread was on a CPU \
         >= {:.0} % of it",
        all.len(),
        cores
            .first()
            .map_or_else(|| "?".to_owned(), |c| c.id.to_string()),
        if main_pinned { "pinned" } else { "NOT pinned" },
        RUN_FOR.as_millis(),
        MIN_ON_CPU * 100.0,
    );
    println!(
        "# T5b's work between calls: {steps} multiply-add steps of {step_ns:.2} ns (about \
         {WORK_NS:.0} ns at full speed; recalibrated before each T5b row, on stderr)"
    );
    if cores.len() < 2 {
        println!(
            "# T1, T3, T4 and T5b skipped: they need the measuring thread and an antagonist on \
             two different CPUs, and this process may use {}",
            all.len()
        );
        run_rounds(&Session::new(None, runs, work), &args, rounds);
        print_summary(rounds);
        return;
    }
    let ant = Antagonist::new();
    std::thread::scope(|s| {
        let ant = &ant;
        let core = cores[1];
        let server = s.spawn(move || ant.serve(core));
        let ctx = Session::new(Some(ant), runs, work);
        // Waits for the antagonist to report its pinning.
        let pinned = ant.pinned();
        println!(
            "# antagonist on CPU {} ({})",
            core.id,
            if pinned { "pinned" } else { "NOT pinned" }
        );
        run_rounds(&ctx, &args, rounds);
        ant.quit();
        server.join().expect("antagonist thread");
    });
    print_summary(rounds);
}

/// Runs the table `rounds` times, in the targets' order; the contended targets (T1, T3, T4,
/// T5b) only when `ctx` has an antagonist.
fn run_rounds(ctx: &Session<'_>, args: &Args, rounds: usize) {
    let contended = ctx.has_antagonist();
    for round in 1..=rounds {
        round_header(round, rounds);
        let legacy = Arc::new(Rig::<Legacy>::new());
        if contended && args.wants(&["T1"]) {
            t1(ctx, &legacy);
        }
        if args.wants(&["T2"]) {
            t2(ctx);
        }
        if contended && args.wants(&["T3"]) {
            t3(ctx, &legacy);
        }
        if contended && args.wants(&["T4"]) {
            t4(ctx);
        }
        if args.wants(&["T5a"]) {
            t5a(ctx);
        }
        if contended && args.wants(&["T5b"]) {
            t5b(ctx);
        }
        if args.wants(&["T6", "T7"]) {
            t6_t7(ctx);
        }
    }
}

/// The bench's own options, and `--bench`, which cargo passes.
#[derive(clap::Parser)]
#[command(
    name = "contention",
    about = "The nohz performance targets (spec/performance.md), each a ratio of interleaved runs",
    override_usage = "cargo bench --bench contention [-- [--rounds <N>] [--cores <A>,<B>] [TARGET...]]"
)]
struct Args {
    /// How many times to run the whole table; with more than one, a summary line per table
    /// line follows (min / median / max, rounds in which the bound held).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=MAX_ROUNDS))]
    rounds: u64,
    /// The CPUs (as the OS numbers them) of the measuring thread and of the antagonist; the
    /// first two usable ones if absent. On a many-core machine this picks what the contended
    /// targets measure: two SMT siblings, two cores sharing a last-level cache, or two across
    /// a die or socket boundary.
    #[arg(long, value_name = "A,B", value_parser = parse_cores)]
    cores: Option<(usize, usize)>,
    /// Passed by `cargo bench`: run the full measurement (without it, a smoke run).
    #[arg(long, hide = true)]
    bench: bool,
    /// Run only these targets (T1 T2 T3 T4 T5a T5b T6 T7, any case); all if none is named.
    #[arg(value_name = "TARGET", value_parser = parse_target)]
    targets: Vec<String>,
}

/// The targets the bench measures, as `T<n>` names.
const TARGETS: [&str; 8] = ["T1", "T2", "T3", "T4", "T5a", "T5b", "T6", "T7"];

/// One of [`TARGETS`], in any case.
fn parse_target(value: &str) -> Result<String, String> {
    TARGETS
        .iter()
        .find(|t| t.eq_ignore_ascii_case(value))
        .map(|t| (*t).to_owned())
        .ok_or_else(|| format!("not a target; the targets are {}", TARGETS.join(" ")))
}

impl Args {
    /// Whether any of `targets` is to run.
    fn wants(&self, targets: &[&str]) -> bool {
        self.targets.is_empty() || self.targets.iter().any(|t| targets.contains(&t.as_str()))
    }
}

/// `A,B`: two different CPU numbers.
fn parse_cores(value: &str) -> Result<(usize, usize), String> {
    let pair = value
        .split_once(',')
        .and_then(|(a, b)| Some((a.trim().parse().ok()?, b.trim().parse().ok()?)));
    match pair {
        Some((a, b)) if a != b => Ok((a, b)),
        _ => Err("two different CPU numbers as A,B".to_owned()),
    }
}

/// The most rounds one invocation runs (each takes about 5 s here).
const MAX_ROUNDS: u64 = 1000;

fn round_header(round: usize, rounds: usize) {
    if rounds > 1 {
        println!("# round {round} of {rounds}");
    }
}

/// Every target, `also` and `floor` line printed so far, in order: its head (`T1
/// pair-churn`, `also T1 pair-churn-paced`, ...), its `<a>/<b>`, its bound, its value and
/// whether the bound held. [`print_summary`] folds the rounds.
static OUTCOMES: Mutex<Vec<Outcome>> = Mutex::new(Vec::new());

struct Outcome {
    head: String,
    ab: String,
    /// `None` for an informational line (no bound).
    bound: Option<Bound>,
    value: Option<f64>,
    /// Whether the floor of the same interleaving was reachable, for lines that have one.
    floor_reachable: Option<bool>,
}

/// With more than one round, one `summary` line per distinct line of the table: how many
/// rounds measured it, the minimum, median and maximum of its value, and in how many rounds
/// the bound held. Ratios from separate rounds are never pooled: each is one interleaved
/// comparison, and the summary only shows how they spread (the host's conditions move
/// between rounds).
fn print_summary(rounds: usize) {
    if rounds < 2 {
        return;
    }
    let outcomes = OUTCOMES.lock().unwrap_or_else(PoisonError::into_inner);
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for o in outcomes.iter() {
        if !keys.contains(&(o.head.as_str(), o.ab.as_str())) {
            keys.push((&o.head, &o.ab));
        }
    }
    println!("# summary over {rounds} rounds: min / median / max of each line's value");
    for (head, ab) in keys {
        let same: Vec<&Outcome> = outcomes
            .iter()
            .filter(|o| o.head == head && o.ab == ab)
            .collect();
        let mut values: Vec<f64> = same.iter().filter_map(|o| o.value).collect();
        values.sort_by(f64::total_cmp);
        let (Some(&min), Some(med), Some(&max)) = (values.first(), median(&values), values.last())
        else {
            println!("summary {head} {ab} n=0");
            continue;
        };
        let judged = same[0].bound.map_or_else(String::new, |bound| {
            let held = same
                .iter()
                .filter(|o| o.value.is_some_and(|v| bound.holds(v)))
                .count();
            format!(" target={bound} held={held}/{}", same.len())
        });
        // Lines measured beside a floor: of the rounds in which the floor met the bound, in
        // how many this line did too.
        let beside_floor = same.iter().any(|o| o.floor_reachable.is_some());
        let judged = match (beside_floor, same[0].bound) {
            (true, Some(bound)) => {
                let reachable: Vec<_> = same
                    .iter()
                    .filter(|o| o.floor_reachable == Some(true))
                    .collect();
                let held = reachable
                    .iter()
                    .filter(|o| o.value.is_some_and(|v| bound.holds(v)))
                    .count();
                format!(
                    "{judged} held-where-floor-reachable={held}/{}",
                    reachable.len()
                )
            }
            _ => judged,
        };
        println!(
            "summary {head} {ab} n={} min={min:.3} median={med:.3} max={max:.3}{judged}",
            values.len(),
        );
    }
}

// ---- the targets ----

/// T1: a pair on CPU 0 while the antagonist runs pairs on CPU 1 of the same machine, each
/// policy against `Legacy`. The three policies are measured in one interleaving (patched,
/// scalable, legacy, patched, ...): how much a second contended line costs depends on where
/// the host places the two vCPUs, which can change within seconds, so both rows divide by the
/// same `Legacy` runs.
///
/// A fourth variant, T3's `mask-only` pair (the idle-mask bit set, the O1 fence, the bit
/// cleared, nothing else), is the floor of any design that keeps one shared idle mask: its
/// ratio to `Legacy` follows as an indented `floor` line, so a run shows whether the
/// `Scalable` bound was reachable under that run's conditions at all. A fifth, a
/// [`PingPong`] round trip, measures what moving one line between the two CPUs cost meanwhile
/// (the indented `transfer` line).
fn t1(ctx: &Session<'_>, legacy: &Arc<Rig<Legacy>>) {
    let patched = Arc::new(Rig::<Patched>::new());
    let scalable = Arc::new(Rig::<Scalable>::new());
    let line = Arc::new(PingPong::default());
    let jobs: [Arc<dyn Churn>; 5] = [
        job(&patched),
        job(&scalable),
        job(legacy),
        mask_pairs(&scalable),
        Arc::clone(&line) as Arc<dyn Churn>,
    ];
    let rows = [
        (0, Patched::NAME, Bound::AtMost(0.55)),
        (1, Scalable::NAME, Bound::AtMost(0.30)),
    ];
    for pacing in [Pacing::Tight, Pacing::Paced] {
        let r = ctx.interleave_many(5, |v| {
            ctx.contended(&jobs[v], || match v {
                0 => timed_pairs(ctx, &patched, pacing),
                1 => timed_pairs(ctx, &scalable, pacing),
                2 => timed_pairs(ctx, legacy, pacing),
                3 => ctx.timed(BATCH_PAIRS, pacing, || mask_pair(&scalable, 0)),
                _ => ctx.timed(BATCH_PAIRS, pacing, || line.round_trip()),
            })
        });
        let lost = ctx.lost();
        let floor = format!("pair-churn-floor-{}", pacing.name());
        let floor = Check::new("T1", &floor, "mask-only", Legacy::NAME, Bound::AtMost(0.30));
        let floor_r = r.pair(3, 2);
        for (v, name, bound) in rows {
            let check = Check::new("T1", "pair-churn", name, Legacy::NAME, bound);
            // The floor is Scalable's: the same pair without the flag upkeep.
            let check = if v == 1 {
                check.beside(&floor, &floor_r)
            } else {
                check
            };
            check.print_as(
                &r.pair(v, 2),
                pacing,
                (pacing != Pacing::Tight).then_some(pacing),
                Some(lost),
            );
        }
        floor.print_floor(&floor_r);
        print_round_trip("T1", "pair-churn", pacing, &r.kept[4]);
    }
}

/// T3: `Scalable`'s whole pair (with the `has_blocked_load` / `needs_update` upkeep) under
/// churn, over the `mask-only` pair (the same pair without the flag upkeep: the mask bit set,
/// the O1 fence, the bit cleared) and over `Legacy`'s pair, the three and a [`PingPong`] round
/// trip in one interleaving; each pair's antagonist runs the same kind of pair on CPU 1. A
/// `floor` line gives the `mask-only` pair over `Legacy`'s against the bound, and a
/// `transfer` line the round trip, as T1's do.
fn t3(ctx: &Session<'_>, legacy: &Arc<Rig<Legacy>>) {
    let rig = Arc::new(Rig::<Scalable>::new());
    let line = Arc::new(PingPong::default());
    let jobs: [Arc<dyn Churn>; 4] = [
        job(&rig),
        mask_pairs(&rig),
        job(legacy),
        Arc::clone(&line) as Arc<dyn Churn>,
    ];
    for pacing in [Pacing::Tight, Pacing::Paced] {
        let r = ctx.interleave_many(4, |v| {
            ctx.contended(&jobs[v], || match v {
                0 => timed_pairs(ctx, &rig, pacing),
                1 => ctx.timed(BATCH_PAIRS, pacing, || mask_pair(&rig, 0)),
                2 => timed_pairs(ctx, legacy, pacing),
                _ => ctx.timed(BATCH_PAIRS, pacing, || line.round_trip()),
            })
        });
        let also = (pacing != Pacing::Tight).then_some(pacing);
        let name = "pair-upkeep-churn";
        Check::new("T3", name, Scalable::NAME, "mask-only", Bound::AtMost(1.3)).print_as(
            &r.pair(0, 1),
            pacing,
            also,
            Some(ctx.lost()),
        );
        // As in T1: whether any design with one shared idle mask could meet the bound here.
        let floor = format!("{name}-floor-{}", pacing.name());
        let floor = Check::new("T3", &floor, "mask-only", Legacy::NAME, Bound::AtMost(0.35));
        let floor_r = r.pair(1, 2);
        Check::new(
            "T3",
            name,
            Scalable::NAME,
            Legacy::NAME,
            Bound::AtMost(0.35),
        )
        .beside(&floor, &floor_r)
        .print_as(&r.pair(0, 2), pacing, also, None);
        floor.print_floor(&floor_r);
        print_round_trip("T3", name, pacing, &r.kept[3]);
    }
}

/// T3's baseline pair on CPU `i` of `rig`: the idle-mask bit set, the O1 fence as the crate
/// places it (after the RMW), the bit cleared.
#[inline(always)]
fn mask_pair<P: Policy>(rig: &Rig<P>, i: usize) {
    let mask = black_box(&*rig.m).nohz().idle_cpus_mask();
    mask.set(rig.cpus[i]);
    nohz::sync::NOHZ_ENTER_IDLE_FENCE.fence_after_rmw();
    mask.clear(rig.cpus[i]);
}

/// Antagonist work for the `mask-only` baseline: [`mask_pair`]s on CPU 1.
fn mask_pairs<P: Policy>(rig: &Arc<Rig<P>>) -> Arc<dyn Churn> {
    let rig = Arc::clone(rig);
    churn(move || mask_pair(&rig, 1))
}

/// A line the two threads hand back and forth: what moving a line between the two CPUs costs
/// while the pairs next to it in the interleaving are measured. The measuring thread writes an
/// odd value and waits for the antagonist's answer, the next even value.
#[derive(Default)]
struct PingPong(CachePadded<AtomicU64>);

impl PingPong {
    /// One round trip: the line goes to the antagonist, which must see the odd value, and
    /// comes back with its answer. Between round trips the value is even.
    #[inline(always)]
    fn round_trip(&self) {
        let v = self.0.load(Ordering::Relaxed);
        self.0.store(v + 1, Ordering::Relaxed);
        while self.0.load(Ordering::Relaxed) != v + 2 {}
    }
}

impl Churn for PingPong {
    /// Answers each odd value with the next even one (no `pause` in either spin: the cost of
    /// the transfer itself is what is measured).
    fn churn_until(&self, stop: &AtomicBool) {
        while !stop.load(Ordering::Relaxed) {
            let v = self.0.load(Ordering::Relaxed);
            if v % 2 == 1 {
                self.0.store(v + 1, Ordering::Relaxed);
            }
        }
    }
}

/// Prints the indented `transfer` line: the median [`PingPong`] round trip of the runs
/// interleaved with a target's variants, in ns (informational: it tells in which of the
/// host's placements of the two vCPUs they were measured).
fn print_round_trip(target: &str, name: &str, pacing: Pacing, kept: &[f64]) {
    let head = format!("transfer {target} {name}-round-trip-{}", pacing.name());
    let value = median(kept);
    let shown = value.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.1}"));
    println!("   {head} ns={shown} runs={}", kept.len());
    OUTCOMES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Outcome {
            head,
            ab: "ns".to_owned(),
            bound: None,
            value,
            floor_reachable: None,
        });
}

/// T2: the uncontended pair, `Patched` against `Legacy` and against two bare locked RMWs.
fn t2(ctx: &Session<'_>) {
    let patched = Rig::<Patched>::new();
    let legacy = Rig::<Legacy>::new();
    let word = rmw_word();
    Check::new(
        "T2",
        "pair-quiet",
        Patched::NAME,
        Legacy::NAME,
        Bound::AtMost(0.75),
    )
    .report(ctx, Pacing::Tight, |pacing| {
        ctx.interleave(|is_b| {
            ctx.quiet(|| {
                if is_b {
                    timed_pairs(ctx, &legacy, pacing)
                } else {
                    timed_pairs(ctx, &patched, pacing)
                }
            })
        })
    });
    Check::new(
        "T2",
        "pair-quiet",
        Patched::NAME,
        "2rmw",
        Bound::AtMost(1.5),
    )
    .report(ctx, Pacing::Tight, |pacing| {
        ctx.interleave(|is_b| {
            ctx.quiet(|| {
                if is_b {
                    ctx.timed(BATCH_PAIRS, pacing, || two_rmws(&word))
                } else {
                    timed_pairs(ctx, &patched, pacing)
                }
            })
        })
    });
}

/// T4: the irqtime read on CPU 0 while the antagonist runs pairs on CPU 1 of the same machine
/// (writing the `nohz` lines), over the same read while the antagonist runs the same pairs on a
/// private machine (so nothing the reader touches is written; the same work on core 1 keeps
/// everything else equal). `Patched` reads its static key; the negative control, `Legacy`,
/// its flag inside the written `nohz` scalar line.
///
/// Paced is the primary variant here: the kernel reads the key once per interrupt, not in a
/// loop, so the per-read cost is what the seed changed. A [`PingPong`] round trip runs in the
/// same interleaving (the `transfer` line): what the negative control shows is what moving a
/// line between the two CPUs costs there.
fn t4(ctx: &Session<'_>) {
    t4_row::<Patched>(ctx, "key", Bound::AtMost(1.05));
    t4_row::<Legacy>(ctx, "flag", Bound::AtLeast(2.0));
}

/// One row of T4 for `P` (`what` names what `P` reads).
fn t4_row<P: Policy>(ctx: &Session<'_>, what: &str, bound: Bound) {
    let shared = Arc::new(Rig::<P>::new());
    let private = Arc::new(Rig::<P>::new());
    let line = Arc::new(PingPong::default());
    let jobs = [
        job(&shared),
        job(&private),
        Arc::clone(&line) as Arc<dyn Churn>,
    ];
    let a = format!("{}-{what}-churn", P::NAME);
    let check = Check::new("T4", "irqtime-read", &a, "quiet", bound);
    for pacing in [Pacing::Paced, Pacing::Tight] {
        let r = ctx.interleave_many(3, |v| {
            ctx.contended(&jobs[v], || match v {
                0 | 1 => ctx.timed(BATCH_READS, pacing, || shared.irqtime_read()),
                _ => ctx.timed(BATCH_PAIRS, pacing, || line.round_trip()),
            })
        });
        let also = (pacing != Pacing::Paced).then_some(pacing);
        check.print_as(&r.pair(0, 1), pacing, also, Some(ctx.lost()));
        print_round_trip("T4", &a, pacing, &r.kept[2]);
    }
}

/// T5a's timing: a busy CPU 0's not-due `nohz_balancer_kick` on a quiet machine over an empty
/// function called the same way, tight (the primary) and paced, `Scalable` and (for
/// comparison) `Patched`. CI gates T5a on the instruction count instead (`ci/guards.sh`).
fn t5a(ctx: &Session<'_>) {
    t5a_row::<Scalable>(ctx);
    t5a_row::<Patched>(ctx);
}

/// One row of T5a's timing for `P`: the kick, the empty function and (`Scalable`'s row, the
/// `floor` line) the spec's whole not-due test alone (the clock and the one deadline word
/// loaded and compared, out of line like the kick), in one interleaving. The floor shows what
/// any kick that makes that test costs over the empty function under the same pacing.
fn t5a_row<P: Policy>(ctx: &Session<'_>) {
    let rig = Rig::<P>::new();
    not_due_with_cpu1_registered(&rig);
    let kick = black_box(kick_cpu0::<P> as fn(&Rig<P>) -> bool);
    let empty = black_box(empty_fn::<P> as fn(&Rig<P>) -> bool);
    let one_word = black_box(deadline_only::<P> as fn(&Rig<P>) -> bool);
    let fns = [kick, empty, one_word];
    let a = format!("{}-kick-not-due", P::NAME);
    let check = Check::new(
        "T5a",
        "kick-not-due-quiet",
        &a,
        "empty",
        Bound::AtMost(1.35),
    );
    // The floor does not depend on the policy: only `Scalable`'s row measures it.
    let with_floor = P::KICK_DEADLINE;
    for pacing in [Pacing::Tight, Pacing::Paced] {
        let r = ctx.interleave_many(2 + usize::from(with_floor), |v| {
            ctx.quiet(|| ctx.timed(BATCH_READS, pacing, || fns[v](&rig)))
        });
        let also = (pacing != Pacing::Tight).then_some(pacing);
        let lost = ctx.lost();
        if with_floor {
            let floor = format!("kick-not-due-quiet-floor-{}", pacing.name());
            let floor = Check::new("T5a", &floor, "one-word", "empty", Bound::AtMost(1.35));
            let floor_r = r.pair(2, 1);
            check
                .beside(&floor, &floor_r)
                .print_as(&r.pair(0, 1), pacing, also, Some(lost));
            floor.print_floor(&floor_r);
        } else {
            check.print_as(&r.pair(0, 1), pacing, also, Some(lost));
        }
    }
    assert!(kick(&rig), "still on the not-due path after the runs");
}

/// T5b: a busy CPU 0's `nohz_balancer_kick` on its not-due path, paced as the spec says (about
/// 300 ns of private work, an `lfence`, the call; here also an `lfence` after it, so the next
/// work cannot hide the call's misses), while the antagonist keeps CPU 1 re-entering idle
/// with its tick stopped (the idempotent `nohz_balance_enter_idle` of every idle pass after seed 001), over
/// an empty function in the same conditions. `Scalable` re-enters without storing and tests
/// "not due" with one load; `Patched` (printed for comparison, same bound) stores
/// `has_blocked_load` on every re-entry, so the kick's reads of the `nohz` line keep missing.
fn t5b(ctx: &Session<'_>) {
    t5b_row::<Scalable>(ctx);
    t5b_row::<Patched>(ctx);
}

/// One row of T5b for `P`.
fn t5b_row<P: Policy>(ctx: &Session<'_>) {
    let Work { steps, step_ns } = ctx.recalibrate();
    eprintln!(
        "T5b {}: work between calls recalibrated: {steps} steps of {step_ns:.2} ns",
        P::NAME
    );
    let rig = Arc::new(Rig::<P>::new());
    not_due_with_cpu1_registered(&rig);
    let job = re_enter(&rig);
    let kick = black_box(kick_cpu0::<P> as fn(&Rig<P>) -> bool);
    let empty = black_box(empty_fn::<P> as fn(&Rig<P>) -> bool);
    let a = format!("{}-kick-not-due", P::NAME);
    Check::new(
        "T5b",
        "kick-not-due-churn",
        &a,
        "empty",
        Bound::AtMost(1.05),
    )
    .report(ctx, Pacing::Worked, |pacing| {
        ctx.interleave(|is_b| {
            let f = if is_b { empty } else { kick };
            ctx.contended(&job, || ctx.timed(BATCH_WORKED, pacing, || f(&rig)))
        })
    });
    assert!(kick(&rig), "still on the not-due path after the runs");
}

/// `nohz_balancer_kick` on CPU 0, out of line; whether it decided `NoFlags`.
#[inline(never)]
fn kick_cpu0<P: Policy>(rig: &Rig<P>) -> bool {
    matches!(
        rig.m.nohz_balancer_kick(rig.cpus[0], &*rig.plat),
        nohz::KickDecision::NoFlags
    )
}

/// T5a's floor: only the not-due test the spec names for `Scalable` (the clock and the one
/// precomputed deadline word), out of line and called the same way as the kick.
#[inline(never)]
fn deadline_only<P: Policy>(rig: &Rig<P>) -> bool {
    let now = nohz::platform::Clock::jiffies(&*rig.plat);
    rig.m
        .nohz()
        .kick_deadline()
        .is_some_and(|d| now.is_before(d))
}

/// The empty function T5b compares with: same signature, does nothing.
#[inline(never)]
fn empty_fn<P: Policy>(_rig: &Rig<P>) -> bool {
    true
}

/// CPU 0 busy; CPU 1 idle and registered; an ILB pass by CPU 1 made `nohz.next_balance` 100
/// ticks ahead, cleared `needs_update` and set `next_blocked` 32 ticks ahead; the clock stands
/// still. CPU 0's kick is then on its not-due path, and CPU 1's re-entries keep it there.
fn not_due_with_cpu1_registered<P: Policy>(rig: &Rig<P>) {
    let (m, p) = (&*rig.m, &*rig.plat);
    let [c0, c1] = rig.cpus;
    m.rq(c0).set_curr_is_idle(false);
    m.rq(c0).set_nr_running(1);
    m.nohz_balance_enter_idle(c1, p);
    m.rq(c1).set_next_balance(p.clock().get().add(100));
    m.nohz_idle_balance_pass(c1, nohz::NohzFlags::STATS | nohz::NohzFlags::NEXT, p);
    m.nohz_balance_enter_idle(c1, p);
    assert!(m.nohz().idle_cpus_mask().test(c1) && !m.nohz().needs_update());
    assert!(kick_cpu0(rig), "CPU 0's kick is on its not-due path");
}

/// Antagonist work for T5b: CPU 1 re-entering idle with its tick stopped, back to back.
fn re_enter<P: Policy>(rig: &Arc<Rig<P>>) -> Arc<dyn Churn> {
    let rig = Arc::clone(rig);
    churn(move || black_box(&*rig.m).nohz_balance_enter_idle(rig.cpus[1], &*rig.plat))
}

/// T6 (`is_empty` on an empty 4096-bit mask against the naive early-exit loop, and in ns) and
/// T7 (`first` on it, in ns; stderr also has it against the naive loop).
///
/// The naive loop's speed depends on where it lands in the binary (see
/// [`common::NAIVE_IS_EMPTY_COPIES`]), so T6 measures several copies of it in the same
/// interleaving and divides by the fastest: the strict baseline, and one that does not move
/// with the layout of a build. stderr has every copy's median and address (here one or two of
/// the four copies run at half the speed of the others, depending on the build).
fn t6_t7(ctx: &Session<'_>) {
    let m = Masks::new();
    let t6 = Check::new(
        "T6",
        "is-empty-4096",
        "is_empty",
        "naive",
        Bound::AtMost(0.40),
    );
    let r6 = t6.report(ctx, Pacing::Tight, |pacing| {
        let r = ctx.interleave_many(1 + NAIVE_COPIES, |v| {
            // A literal index into the constant table each: direct calls, as to `is_empty`.
            const _: () = assert!(NAIVE_COPIES == 4, "one match arm per naive copy");
            let (words, nr) = (&*m.words, m.nr.get());
            ctx.quiet(|| match v {
                0 => ctx.timed(BATCH_SCANS, pacing, || mask_is_empty(&m.mask, m.nr)),
                1 => ctx.timed(BATCH_SCANS, pacing, || NAIVE_IS_EMPTY_COPIES[0](words, nr)),
                2 => ctx.timed(BATCH_SCANS, pacing, || NAIVE_IS_EMPTY_COPIES[1](words, nr)),
                3 => ctx.timed(BATCH_SCANS, pacing, || NAIVE_IS_EMPTY_COPIES[2](words, nr)),
                _ => ctx.timed(BATCH_SCANS, pacing, || NAIVE_IS_EMPTY_COPIES[3](words, nr)),
            })
        });
        let medians: Vec<f64> = (1..=NAIVE_COPIES)
            .map(|v| median(&r.kept[v]).unwrap_or(f64::INFINITY))
            .collect();
        let fastest = (0..NAIVE_COPIES)
            .min_by(|&a, &b| medians[a].total_cmp(&medians[b]))
            .unwrap_or(0);
        let copies: Vec<String> = NAIVE_IS_EMPTY_COPIES
            .iter()
            .zip(&medians)
            .map(|(f, m)| format!("{m:.2} ns at {:#x}", *f as usize))
            .collect();
        eprintln!(
            "T6 is-empty-4096 {} (naive copies): {}; the fastest, copy {fastest}, is the baseline",
            pacing.name(),
            copies.join(", ")
        );
        r.pair(0, 1 + fastest)
    });
    Check::new("T6", "is-empty-4096", "is_empty", "ns", Bound::AtMost(20.0))
        .print(&r6, Pacing::Tight);
    Check::new("T7", "first-empty-4096", "first", "ns", Bound::AtMost(25.0)).report(
        ctx,
        Pacing::Tight,
        |pacing| {
            ctx.interleave(|is_b| {
                ctx.quiet(|| {
                    if is_b {
                        ctx.timed(BATCH_SCANS, pacing, || naive_first(&m.words, m.nr.get()))
                    } else {
                        ctx.timed(BATCH_SCANS, pacing, || mask_first(&m.mask, m.nr))
                    }
                })
            })
        },
    );
}

// ---- shared by the targets ----

/// Pairs on CPU 0 of `rig` for one run; ns per pair.
fn timed_pairs<P: Policy>(ctx: &Session<'_>, rig: &Rig<P>, pacing: Pacing) -> f64 {
    ctx.timed(BATCH_PAIRS, pacing, || rig.pair(0))
}

/// Antagonist work: back-to-back pairs on CPU 1 of `rig`.
fn job<P: Policy>(rig: &Arc<Rig<P>>) -> Arc<dyn Churn> {
    let rig = Arc::clone(rig);
    churn(move || rig.pair(1))
}

// ---- reporting ----

/// The pacing a target's `also` line shows, given the one it is judged on.
fn other(pacing: Pacing) -> Pacing {
    match pacing {
        Pacing::Tight => Pacing::Paced,
        Pacing::Paced | Pacing::Worked => Pacing::Tight,
    }
}

/// A target's bound on its value.
#[derive(Debug, Clone, Copy)]
enum Bound {
    /// The value must be at most this.
    AtMost(f64),
    /// The value must be at least this.
    AtLeast(f64),
}

impl Bound {
    fn holds(self, v: f64) -> bool {
        match self {
            Bound::AtMost(x) => v <= x,
            Bound::AtLeast(x) => v >= x,
        }
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Bound::AtMost(x) => write!(f, "<={x}"),
            Bound::AtLeast(x) => write!(f, ">={x}"),
        }
    }
}

/// One target check: `<a>/<b>` against `bound`. A `b` of `ns` makes the value median(A) in
/// nanoseconds.
#[derive(Clone, Copy)]
struct Check<'s> {
    target: &'s str,
    name: &'s str,
    a: &'s str,
    b: &'s str,
    bound: Bound,
    /// Whether the same interleaving's `floor` line met this bound (set by
    /// [`Check::beside`]; `None` for lines without a floor).
    floor_reachable: Option<bool>,
}

impl<'s> Check<'s> {
    fn new(target: &'s str, name: &'s str, a: &'s str, b: &'s str, bound: Bound) -> Self {
        Check {
            target,
            name,
            a,
            b,
            bound,
            floor_reachable: None,
        }
    }

    /// This line with the verdict of `floor`, measured in the same interleaving: the summary
    /// then also counts the rounds in which the floor was reachable and this bound held.
    fn beside(self, floor: &Check<'_>, r: &Interleaved<f64>) -> Self {
        let reachable = floor.value(r).is_some_and(|v| floor.bound.holds(v));
        Check {
            floor_reachable: Some(reachable),
            ..self
        }
    }

    /// Measures with `primary` pacing and prints the target line, then with the other pacing
    /// and prints the `also` line. `measure(pacing)` runs one interleaved comparison. Returns
    /// the primary measurement.
    fn report(
        &self,
        ctx: &Session<'_>,
        primary: Pacing,
        mut measure: impl FnMut(Pacing) -> Interleaved<f64>,
    ) -> Interleaved<f64> {
        let r = measure(primary);
        self.print_as(&r, primary, None, Some(ctx.lost()));
        let other = other(primary);
        let r2 = measure(other);
        self.print_as(&r2, other, Some(other), Some(ctx.lost()));
        r
    }

    /// Prints the target line for a measurement already reported by another check.
    fn print(&self, r: &Interleaved<f64>, pacing: Pacing) {
        self.print_as(r, pacing, None, None);
    }

    fn value(&self, r: &Interleaved<f64>) -> Option<f64> {
        let a = median(&r.a)?;
        if self.b == "ns" {
            return Some(a);
        }
        let b = median(&r.b)?;
        Some(a / b)
    }

    /// Prints an indented `floor` line: the best any design could do here, against the bound
    /// (`reachable` or `below-floor` instead of pass / fail).
    fn print_floor(&self, r: &Interleaved<f64>) {
        let tail = self.verdict_line(r, ["reachable", "below-floor"]);
        let head = format!("floor {} {}", self.target, self.name);
        println!("   {head} {tail}");
        self.record(head, r);
    }

    /// Keeps this line's value for [`print_summary`].
    fn record(&self, head: String, r: &Interleaved<f64>) {
        OUTCOMES
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Outcome {
                head,
                ab: format!("{}/{}", self.a, self.b),
                bound: Some(self.bound),
                value: self.value(r),
                floor_reachable: self.floor_reachable,
            });
    }

    /// `<a>/<b> ratio=<v> runs=<n> target=<bound> <verdict>`, the verdict `words[0]` if the
    /// bound holds, else `words[1]`.
    fn verdict_line(&self, r: &Interleaved<f64>, words: [&str; 2]) -> String {
        let v = self.value(r);
        let verdict = words[usize::from(!v.is_some_and(|v| self.bound.holds(v)))];
        let value = v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.3}"));
        let runs = r.a.len().min(r.b.len());
        format!(
            "{}/{} ratio={value} runs={runs} target={} {verdict}",
            self.a, self.b, self.bound
        )
    }

    /// Prints one line: the target line, or (`also`) the indented line of the other pacing.
    /// `lost`: runs the gate discarded for the measuring thread and for the antagonist.
    fn print_as(
        &self,
        r: &Interleaved<f64>,
        pacing: Pacing,
        also: Option<Pacing>,
        lost: Option<(usize, usize)>,
    ) {
        let head = match also {
            None => format!("{} {}", self.target, self.name),
            Some(p) => format!("also {} {}-{}", self.target, self.name, p.name()),
        };
        let indent = if also.is_some() { "   " } else { "" };
        println!("{indent}{head} {}", self.verdict_line(r, ["pass", "fail"]));
        self.record(head, r);
        let ns = |xs: &[f64]| median(xs).map_or_else(|| "n/a".to_owned(), |m| format!("{m:.2} ns"));
        let lost = lost.map_or_else(String::new, |(m, a)| {
            format!("; descheduled: measuring thread {m}, antagonist {a}")
        });
        eprintln!(
            "{} {} {} ({}): {} {} ({} kept, {} discarded), {} {} ({} kept, {} discarded){lost}",
            self.target,
            self.name,
            pacing.name(),
            if also.is_some() { "info" } else { "target" },
            self.a,
            ns(&r.a),
            r.a.len(),
            r.discarded.0,
            if self.b == "ns" { "reference" } else { self.b },
            ns(&r.b),
            r.b.len(),
            r.discarded.1,
        );
    }
}
