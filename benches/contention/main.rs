//! The performance targets of spec/performance.md, each a ratio of two variants measured in one
//! process: `cargo bench --bench contention`. benches/README.md has the method and the results.
//!
//! Not criterion: the contended targets need a second thread pinned to the other core (the
//! antagonist) running before and during every timed run, both threads' CPU time read around
//! each run, and runs in which either thread was descheduled thrown away; criterion times one
//! closure on one thread. So this is a plain `main` (`harness = false`) on the harness's
//! measurement machinery (`nohz_stress::measure`: the antagonist, the pacings, the work
//! calibration, interleaving and the gate): variants interleaved in rounds (one run of each,
//! in an order each round draws afresh), [`RUNS`] kept
//! runs of about 2 ms each, ratios of medians, the per-thread on-CPU gate at [`MIN_ON_CPU`].
//!
//! # Layout
//!
//! [`TABLE`] below is the T-table as data: every line's name, bound and comparison kind, which
//! targets need the antagonist and which pacing judges them. The runner walks it; each target
//! has a module that measures its lines (`t1` ... `t6_t7`), and `report` prints them.
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
//! N` runs the table `N` times (the host's conditions move between rounds; see "Three
//! placements" in benches/README.md) and ends with one line per distinct table line:
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
//! contended line costs, so what `Legacy`'s second line adds, depends on which, and on where
//! each line lies: T1, T3 and T8a measure every variant over 41 placements of its lines and
//! add an indented `means` line (`placed.rs`).
//!
//! T1 has a `Scalable` row; T3 is `Scalable`'s; T5b has rows for `Scalable` and (for
//! comparison) `Patched`. T5a has a timing row here (quiet, `Scalable` and for comparison
//! `Patched`). T1, T5a and T5b also have a `Paced` row (issue 39: its T-rows at least as good
//! as `Scalable`'s; it runs `Scalable`'s idle entry, exit and not-due gate). What gates CI for
//! T5a is its instruction count in `ci/guards.sh`, as T10 is a
//! counting guard there too.

#[path = "../common/mod.rs"]
mod common;
mod placed;
mod report;
mod t1;
mod t2;
mod t3;
mod t4;
mod t5a;
mod t5b;
mod t6_t7;
mod t8;
mod transfer;

use common::Rig;
use nohz::{Legacy, Paced, Patched, Policy, Scalable};
use nohz_stress::measure::{
    Antagonist, Churn, MIN_ON_CPU, Pacing, RUN_FOR, Session, WORK_NS, Work, churn, median,
};
use report::Bound::{AtLeast, AtMost, Report, Within};
use report::{Outcome, Run, Target, ns, ratio};
use std::sync::Arc;

/// The T-table of spec/performance.md as this bench measures it, in the order it runs. An
/// entry's lines print in this order (a line with a floor prints the floor's line after its
/// own): measured together by one function that reads them in this order, or each by the
/// function beside it (one row per policy, the policy the row's `a` names).
#[rustfmt::skip] // a table: one line per check
const TABLE: [Target; 13] = [
    Target {
        checks: &[
            ratio("T1", "pair-churn", PATCHED, LEGACY, AtMost(0.55)),
            ratio("T1", "pair-churn", SCALABLE, LEGACY, AtMost(0.30))
                .with_floor("mask-only", LEGACY),
            ratio("T1", "pair-churn", PACED, LEGACY, AtMost(0.30)),
        ],
        contended: true,
        primary: Pacing::Tight,
        run: Run::Together(t1::run),
    },
    Target {
        checks: &[
            ratio("T2", "pair-quiet", PATCHED, LEGACY, AtMost(0.75)),
            ratio("T2", "pair-quiet", PATCHED, "2rmw", AtMost(1.5)),
        ],
        contended: false,
        primary: Pacing::Tight,
        run: Run::Together(t2::run),
    },
    Target {
        checks: &[
            ratio("T3", "pair-upkeep-churn", SCALABLE, "mask-only", AtMost(1.3)),
            ratio("T3", "pair-upkeep-churn", SCALABLE, LEGACY, AtMost(0.35))
                .with_floor("mask-only", LEGACY),
        ],
        contended: true,
        primary: Pacing::Tight,
        run: Run::Together(t3::run),
    },
    Target {
        checks: &[
            ratio("T4", "irqtime-read", "patched-key-churn", "quiet", AtMost(1.05)),
            ratio("T4", "irqtime-read", "legacy-flag-churn", "quiet", AtLeast(2.0)),
        ],
        contended: true,
        primary: Pacing::Paced,
        run: Run::EachLine(&[t4::row::<Patched>, t4::row::<Legacy>]),
    },
    Target {
        checks: &[
            ratio("T5a", "kick-not-due-quiet", "scalable-kick-not-due", "empty", AtMost(1.35))
                .with_floor("one-word", "empty"),
            ratio("T5a", "kick-not-due-quiet", "patched-kick-not-due", "empty", AtMost(1.35)),
            ratio("T5a", "kick-not-due-quiet", "paced-kick-not-due", "empty", AtMost(1.35))
                .with_floor("one-word", "empty"),
        ],
        contended: false,
        primary: Pacing::Tight,
        run: Run::EachLine(&[t5a::row::<Scalable>, t5a::row::<Patched>, t5a::row::<Paced>]),
    },
    Target {
        checks: &[
            ratio("T5b", "kick-not-due-churn", "scalable-kick-not-due", "empty", AtMost(1.05)),
            ratio("T5b", "kick-not-due-churn", "patched-kick-not-due", "empty", AtMost(1.05)),
            ratio("T5b", "kick-not-due-churn", "paced-kick-not-due", "empty", AtMost(1.05)),
        ],
        contended: true,
        primary: Pacing::Worked,
        run: Run::EachLine(&[t5b::row::<Scalable>, t5b::row::<Patched>, t5b::row::<Paced>]),
    },
    Target {
        checks: &[
            ratio("T6", "is-empty-4096", "is_empty", "naive", AtMost(0.40)),
            ns("T6", "is-empty-4096", "is_empty", AtMost(20.0)),
            ns("T7", "first-empty-4096", "first", AtMost(25.0)),
        ],
        contended: false,
        primary: Pacing::Tight,
        run: Run::Together(t6_t7::run),
    },
    Target {
        checks: &[
            ratio("T8a", "sharded-pair-churn", "sticky", "sticky-quiet", AtMost(1.15)),
            ratio("T8a", "sharded-pair-churn", "sticky", "flat", AtMost(0.30)),
            ratio("T8d", "exact-pair-control", "exact", "sticky", AtLeast(3.0)),
        ],
        contended: true,
        primary: Pacing::Tight,
        run: Run::Together(t8::run_pairs),
    },
    Target {
        checks: &[
            ratio("T8b", "same-shard-control", "same-shard", "flat", Within(0.85, 1.15)),
            ratio("T8b", "same-shard-control", "flat-again", "flat", Report),
            ratio("T8b", "same-shard-control", "flat-plus-work", "flat", Report),
        ],
        contended: true,
        primary: Pacing::Paced,
        run: Run::Together(t8::run_control),
    },
    Target {
        checks: &[
            ratio("T8c", "tick-due-check-churn", "sharded-hint", "empty", AtMost(1.05)),
            ratio("T8c", "tick-due-check-churn", "sharded-validated", "empty", Report),
            ratio("T8c", "tick-due-check-churn", "flat", "empty", Report),
            ratio("T8d", "exact-tick-control", "exact", "empty", AtLeast(1.15)),
        ],
        contended: true,
        primary: Pacing::Worked,
        run: Run::Together(t8::run_tick),
    },
    Target {
        checks: &[
            ratio("T8g", "cost-model", "flat", "model", Within(0.7, 1.3)),
            ratio("T8g", "cost-model", "sticky", "model", Within(0.7, 1.3)),
            ratio("T8g", "cost-model", "same-shard", "model", Within(0.7, 1.3)),
            ratio("T8g", "cost-model", "exact", "model", Within(0.7, 1.3)),
        ],
        contended: true,
        primary: Pacing::Paced,
        run: Run::Together(t8::run_model),
    },
    Target {
        checks: &[
            ratio("T8h", "ilb-walk-churn", "sharded", "flat", AtMost(2.5)),
            ratio("T8h", "ilb-walk-visits-churn", "sharded", "flat", AtMost(1.05)),
        ],
        contended: true,
        primary: Pacing::Paced,
        run: Run::Together(t8::run_walk),
    },
    Target {
        checks: &[
            ratio("T8e", "sharded-pair-quiet", "sticky", "flat", AtMost(1.15)),
            ratio("T8e", "sharded-pair-quiet", "same-shard", "flat", Report),
        ],
        contended: false,
        primary: Pacing::Tight,
        run: Run::Together(t8::run_quiet),
    },
];

/// The policies' names, as the table's lines name their variants.
const PATCHED: &str = Patched::NAME;
/// See [`PATCHED`].
const SCALABLE: &str = Scalable::NAME;
/// See [`PATCHED`].
const LEGACY: &str = Legacy::NAME;
/// See [`PATCHED`].
const PACED: &str = Paced::NAME;

// Checked at compile time: every entry measured line by line has one function per line.
const _: () = {
    let mut i = 0;
    while i < TABLE.len() {
        assert!(
            TABLE[i].is_consistent(),
            "a table entry without one function per line"
        );
        i += 1;
    }
};

/// Kept runs per variant (the spec asks for at least 11).
pub const RUNS: usize = 41;

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
        "# T5b's work between calls: {} multiply-add steps of {:.2} ns (about {WORK_NS:.0} ns at \
         full speed; recalibrated before each T5b row, on stderr)",
        work.steps, work.step_ns
    );
    if cores.len() < 2 {
        let contended: Vec<&str> = TABLE
            .iter()
            .filter(|t| t.contended)
            .flat_map(Target::names)
            .collect();
        println!(
            "# {} skipped: they need the measuring thread and an antagonist on two different \
             CPUs, and this process may use {}",
            join_and(&contended),
            all.len()
        );
        run_rounds(&Session::new(None, runs, work), &args, rounds);
        print_summary(rounds);
        return;
    }
    let core = cores[1];
    Antagonist::scoped(core, |ant| {
        let session = Session::new(Some(ant), runs, work);
        // Waits for the antagonist to report its pinning.
        let pinned = ant.pinned();
        println!(
            "# antagonist on CPU {} ({})",
            core.id,
            if pinned { "pinned" } else { "NOT pinned" }
        );
        run_rounds(&session, &args, rounds);
    });
    print_summary(rounds);
}

/// `A`, `A and B`, `A, B and C`.
fn join_and(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// What one round's targets share: the measuring session, and the `Legacy` rig that T1 and T3
/// both divide by.
pub struct Round<'s> {
    /// The measuring thread's session.
    pub session: &'s Session<'s>,
    /// `Legacy` machines at [`placed::PLACEMENTS`] addresses, built once a round.
    pub legacy: Vec<Arc<Rig<Legacy>>>,
}

/// Runs the table `rounds` times, in its order; the contended targets only when `session` has
/// an antagonist.
fn run_rounds(session: &Session<'_>, args: &Args, rounds: usize) {
    for round in 1..=rounds {
        if rounds > 1 {
            println!("# round {round} of {rounds}");
        }
        let round = Round {
            session,
            legacy: placed::placements(Rig::<Legacy>::new),
        };
        for target in &TABLE {
            if (session.has_antagonist() || !target.contended) && args.wants(target) {
                target.run(&round);
            }
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
    #[arg(
        value_name = "TARGET",
        value_parser = parse_target,
        help = target_help()
    )]
    targets: Vec<String>,
}

/// The most rounds one invocation runs (each takes about 5 s here).
const MAX_ROUNDS: u64 = 1000;

/// The help of `[TARGET]...`, its list of names from the table.
fn target_help() -> String {
    let names = target_names().join(" ");
    format!("Run only these targets ({names}, any case); all if none is named")
}

/// Every name `-- T1 ...` accepts, in the table's order.
fn target_names() -> Vec<&'static str> {
    TABLE.iter().flat_map(Target::names).collect()
}

/// One of [`target_names`], in any case.
fn parse_target(value: &str) -> Result<String, String> {
    let names = target_names();
    names
        .iter()
        .find(|t| t.eq_ignore_ascii_case(value))
        .map(|t| (*t).to_owned())
        .ok_or_else(|| format!("not a target; the targets are {}", names.join(" ")))
}

impl Args {
    /// Whether `target` is to run: no target named, or one of its names.
    fn wants(&self, target: &Target) -> bool {
        self.targets.is_empty() || target.names().any(|n| self.targets.iter().any(|t| t == n))
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

/// With more than one round, one `summary` line per distinct line of the table: how many
/// rounds measured it, the minimum, median and maximum of its value, and in how many rounds
/// the bound held. Ratios from separate rounds are never pooled: each is one interleaved
/// comparison, and the summary only shows how they spread (the host's conditions move
/// between rounds).
fn print_summary(rounds: usize) {
    if rounds < 2 {
        return;
    }
    let outcomes = report::outcomes();
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
        let mut judged = String::new();
        if let Some(bound) = same[0].bound {
            let held = same.iter().filter(|o| o.held()).count();
            judged = format!(" target={bound} held={held}/{}", same.len());
            // Lines measured beside a floor: of the rounds in which the floor met the bound,
            // in how many this line did too.
            if same.iter().any(|o| o.floor_reachable.is_some()) {
                let reachable: Vec<_> = same
                    .iter()
                    .filter(|o| o.floor_reachable == Some(true))
                    .collect();
                let held = reachable.iter().filter(|o| o.held()).count();
                judged += &format!(" held-where-floor-reachable={held}/{}", reachable.len());
            }
        }
        println!(
            "summary {head} {ab} n={} min={min:.3} median={med:.3} max={max:.3}{judged}",
            values.len(),
        );
    }
}

// ---- shared by the targets ----

/// Pairs on CPU 0 of `rig` for one run; ns per pair.
fn timed_pairs<P: Policy>(s: &Session<'_>, rig: &Rig<P>, pacing: Pacing) -> f64 {
    s.timed(BATCH_PAIRS, pacing, || rig.pair(0))
}

/// Antagonist work: back-to-back pairs on CPU 1 of `rig`.
fn pairs_on_cpu1<P: Policy>(rig: &Arc<Rig<P>>) -> Arc<dyn Churn> {
    let rig = Arc::clone(rig);
    churn(move || rig.pair(1))
}
