//! The ordering mutation runner: every named site of `nohz::internals::SITES`, every strictly
//! weaker form of it, every model.
//!
//! For each mutant (one site weakened with `nohz::sync::mutation::with_weakened`) the runner
//! runs every model of [`MODELS`] with the panic hook silenced and records which ones fail.
//! Verdicts:
//!
//! - **killed**: at least one model failed; the table names them and the first one's message;
//! - **survived**: no model failed. A survivor fails the run unless it is listed in
//!   [`EQUIVALENTS`];
//! - **equivalent**: listed in [`EQUIVALENTS`] (loom cannot tell it from the declared ordering,
//!   for the reason given) and no model failed. An equivalent mutant that *is* killed also fails
//!   the run, so the list stays honest.
//!
//! Before the mutants, every model runs once with the declared orderings and must pass.
//! Running every model against every mutant (rather than the models "meant" for a site) costs
//! a few seconds and shows which models notice which orderings.

use crate::Explored;
use crate::models::blocked_load::{self, Clear, Owner, Passes};
use crate::models::sharded::{self, Clears};
use crate::models::{hotplug, idle_flush, irqtime, o1_o2, o3, o5, o7, o8, rebuild, seed001};
use nohz::internals::{CODE_MUTANTS, CodeMutant, SITES, with_code_mutant};
use nohz::sync::mutation::with_weakened;
use nohz::sync::{NOHZ_CSD_FETCH_ANDNOT, NOHZ_KICK_FETCH_OR, Ordering, Site, Weakening};
use nohz::{Legacy, Patched, Scalable};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// A model the runner runs against every mutant.
#[derive(Debug)]
pub struct Model {
    /// Short name for the table (`file::function[variant]`).
    pub name: &'static str,
    /// The obligation or protocol it proves.
    pub proves: &'static str,
    /// Runs the model; returns what it explored, panics when an execution fails.
    pub run: fn() -> Explored,
}

/// Every model that must pass with the declared orderings (the expected-failure variants are
/// not here: they fail by design).
pub static MODELS: &[Model] = &[
    Model {
        name: "o1_o2[patched]",
        proves: "O1, O2",
        run: o1_o2::enter_idle_against_ilb::<Patched>,
    },
    Model {
        name: "o1_o2[legacy]",
        proves: "O1, O2",
        run: o1_o2::enter_idle_against_ilb::<Legacy>,
    },
    Model {
        name: "o1_o2[scalable]",
        proves: "O1, O2",
        run: o1_o2::enter_idle_against_ilb::<Scalable>,
    },
    Model {
        name: "o7[register]",
        proves: "O7 (Scalable)",
        run: o7::register_with_flags_set::<Scalable>,
    },
    Model {
        name: "o7[repeat]",
        proves: "O6/O7 (Scalable)",
        run: o7::repeat_enter_idle_against_ilb::<Scalable>,
    },
    Model {
        name: "o7[deadline]",
        proves: "kick deadline (Scalable)",
        run: o7::deadline_against_ilb::<Scalable>,
    },
    Model {
        name: "o3",
        proves: "O3",
        run: o3::kick_ownership,
    },
    Model {
        name: "o5[patched]",
        proves: "O5 (kick path)",
        run: || o5::enter_exit_against_kick::<Patched>(loom::sync::atomic::Ordering::Acquire),
    },
    Model {
        name: "o5[legacy]",
        proves: "O5 (kick path)",
        run: || o5::enter_exit_against_kick::<Legacy>(loom::sync::atomic::Ordering::Acquire),
    },
    Model {
        name: "seed001[stop_tick]",
        proves: "seed 001, O1/O2 on its path",
        run: || seed001::nohz_full_cpu_goes_idle::<Patched>(seed001::IdlePass::StopTick),
    },
    Model {
        name: "seed001[do_idle]",
        proves: "seed 001, O1/O2 on its path",
        run: || seed001::nohz_full_cpu_goes_idle::<Patched>(seed001::IdlePass::DoIdle),
    },
    Model {
        name: "idle_flush",
        proves: "elided kick IPI against the idle exit's flush",
        run: || idle_flush::elided_ipi_against_idle_exit(idle_flush::Contract::Kept),
    },
    Model {
        name: "o8",
        proves: "O8",
        run: o8::newilb_against_kicks::<Patched>,
    },
    Model {
        name: "hotplug[patched]",
        proves: "sched_cpu_deactivate order",
        run: || {
            hotplug::deactivate_against_idle_entry_and_kicks::<Patched>(
                hotplug::GracePeriod::WaitsForReaders,
            )
        },
    },
    Model {
        name: "hotplug[scalable]",
        proves: "sched_cpu_deactivate order",
        run: || {
            hotplug::deactivate_against_idle_entry_and_kicks::<Scalable>(
                hotplug::GracePeriod::WaitsForReaders,
            )
        },
    },
    Model {
        name: "rebuild[patched]",
        proves: "domain rebuild (RCU publish)",
        run: || {
            rebuild::rebuild_against_enter_exit::<Patched>(hotplug::GracePeriod::WaitsForReaders)
        },
    },
    Model {
        name: "blocked_load[patched]",
        proves: "update_blocked_load_status: no set lost to the clear",
        run: || {
            blocked_load::set_against_clear::<Patched>(
                Clear::Conditional,
                Passes::One,
                Owner::EntersIdle,
            )
        },
    },
    Model {
        name: "blocked_load[legacy]",
        proves: "update_blocked_load_status: no set lost to the clear",
        run: || {
            blocked_load::set_against_clear::<Legacy>(
                Clear::Conditional,
                Passes::One,
                Owner::EntersIdle,
            )
        },
    },
    Model {
        name: "blocked_load[scalable]",
        proves: "update_blocked_load_status: no set lost to the clear",
        run: || {
            blocked_load::set_against_clear::<Scalable>(
                Clear::Conditional,
                Passes::One,
                Owner::EntersIdle,
            )
        },
    },
    Model {
        name: "blocked_load[patched,newidle]",
        proves: "update_blocked_load_status: no set lost to the clear, newidle's own refresh too",
        run: || {
            blocked_load::set_against_clear::<Patched>(
                Clear::Conditional,
                Passes::One,
                Owner::NewidleFirst,
            )
        },
    },
    Model {
        name: "irqtime[disable]",
        proves: "§8 static key",
        run: || irqtime::flip_against_accounting::<Patched>(irqtime::Flip::Disable),
    },
    Model {
        name: "irqtime[enable]",
        proves: "§8 static key",
        run: || irqtime::flip_against_accounting::<Patched>(irqtime::Flip::Enable),
    },
    Model {
        name: "irqtime[handshake]",
        proves: "§8 static key",
        run: || irqtime::disable_then_rely_on_quiescence::<Patched>(irqtime::Quiesce::Handshake),
    },
    Model {
        name: "o1_o2[sharded]",
        proves: "O1, O2 (Sharded)",
        run: o1_o2::enter_idle_against_ilb::<sharded::One<2>>,
    },
    Model {
        name: "sharded::L1",
        proves: "S1 (Sharded)",
        run: sharded::s1_sticky_summary,
    },
    Model {
        name: "sharded::L2",
        proves: "S1, S2 (Sharded, two shards in one summary word)",
        run: sharded::s1_summary_rmw,
    },
    Model {
        name: "sharded::L3",
        proves: "O1 (Sharded walk)",
        run: || sharded::o1_sharded_walk(Clears::Stats),
    },
    Model {
        name: "sharded::L3n",
        proves: "O2 (Sharded walk, NEXT)",
        run: || sharded::o1_sharded_walk(Clears::Next),
    },
    Model {
        name: "sharded::L4",
        proves: "S1 + O1 (Sharded)",
        run: sharded::enter_gc_ilb,
    },
    // sharded::L5 (four threads, about 40,000 executions at bound 2) runs once in
    // tests/sharded_idle.rs, not against every mutant: every mutant it kills, L4 (three
    // threads, a hundredth of its executions) kills too, and it alone made this table run
    // several minutes longer.
    Model {
        name: "sharded::L6",
        proves: "S1 under churn (Sharded)",
        run: sharded::churn_sticky,
    },
    Model {
        name: "sharded::L8",
        proves: "owner bits (Sharded)",
        run: sharded::owner_bits,
    },
];

/// A code mutant (a rejected design of the sharded idle set) loom cannot kill, and why.
#[derive(Debug)]
pub struct CodeEquivalent {
    /// The mutant.
    pub mutant: CodeMutant,
    /// Why no model can tell it from the real code.
    pub reason: &'static str,
}

/// The code mutants expected to survive (spec `sharded-idle.md` §2.7, "equivalent mutants");
/// as with [`EQUIVALENTS`], one that is killed fails the run.
pub static CODE_EQUIVALENTS: &[CodeEquivalent] = &[
    CodeEquivalent {
        mutant: CodeMutant::BlindSummarySet,
        reason: "equivalent: a blind fetch_or sets the same bit the read-then-set would; it \
                 only writes the nohz line on every registration, a cost (T8f's summary-write \
                 count), not a bug",
    },
    CodeEquivalent {
        mutant: CodeMutant::GcNoPreRead,
        reason: "equivalent: the GC's pre-read only decides which flagged shards to clear; \
                 clearing a non-empty one is undone by the re-read after the fence (S1 holds), \
                 and the candidates come from that re-read",
    },
];

/// One mutation: a weakened site, or a code mutant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutation {
    /// The site weakened so.
    Weaken(Weakening),
    /// The sharded idle set's code replaced by a rejected design.
    Code(CodeMutant),
}

/// A mutant loom cannot kill, and why.
#[derive(Debug)]
pub struct Equivalent {
    /// The site.
    pub site: &'static Site,
    /// The weakening.
    pub weakening: Weakening,
    /// Why no loom model can tell it from the declared ordering.
    pub reason: &'static str,
}

/// The mutants expected to survive under loom (spec `verification.md`). Each is still run;
/// if one is killed the runner fails, so that this list never hides a real result.
pub static EQUIVALENTS: &[Equivalent] = &[
    Equivalent {
        site: &NOHZ_KICK_FETCH_OR,
        weakening: Weakening::To(Ordering::Release),
        reason: "loom-equivalent: drops only the Acquire half, which hands the csd freed by \
                 the previous handler to the next owner; loom's RMWs always read the latest \
                 value, so the owner's csd_lock swap sees the free anyway (LKMM forbids the \
                 busy csd only with both halves)",
    },
    Equivalent {
        site: &NOHZ_CSD_FETCH_ANDNOT,
        weakening: Weakening::To(Ordering::Acquire),
        reason: "loom-equivalent: drops only the Release half, which publishes the csd free \
                 (done before this RMW) to the next owner; loom's RMWs always read the latest \
                 value, so the next csd_lock swap sees it anyway",
    },
];

/// What happened to one mutant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Killed by these models; the first one's panic message.
    Killed {
        /// The models that failed.
        by: Vec<&'static str>,
        /// The first failing model's message.
        message: String,
    },
    /// No model failed, and the mutant is not listed as equivalent: a missing model.
    Survived,
    /// Listed as equivalent, and indeed no model failed.
    Equivalent(&'static str),
    /// Listed as equivalent, yet killed: the list is wrong.
    EquivalentKilled {
        /// The models that failed.
        by: Vec<&'static str>,
        /// The first failing model's message.
        message: String,
    },
}

impl Verdict {
    /// Whether this verdict fails the run.
    pub fn is_failure(&self) -> bool {
        matches!(self, Verdict::Survived | Verdict::EquivalentKilled { .. })
    }
}

/// One row of the table.
#[derive(Debug, Clone)]
pub struct Row {
    /// The site's name.
    pub site: &'static str,
    /// The weakening applied, or the code mutant.
    pub weakening: Mutation,
    /// The verdict.
    pub verdict: Verdict,
    /// Wall time spent on this mutant (all models).
    pub time: Duration,
}

/// The equivalence entry for `site` weakened by `w`, if any.
pub fn equivalent(site: &Site, w: Weakening) -> Option<&'static Equivalent> {
    EQUIVALENTS
        .iter()
        .find(|e| e.site.name() == site.name() && e.weakening == w)
}

/// Runs every model with the declared orderings; panics naming the first that fails or that
/// leaves one of its cases unreached. Returns what each model explored.
pub fn baseline() -> Vec<(&'static str, Explored)> {
    MODELS
        .iter()
        .map(|model| {
            let mut explored = None;
            if let Some(msg) = crate::fails_quietly(|| explored = Some((model.run)())) {
                panic!(
                    "model {} fails with the declared orderings: {msg}",
                    model.name
                );
            }
            let explored = explored.expect("the model returned");
            explored.assert_all_reached();
            (model.name, explored)
        })
        .collect()
}

/// Runs every model against every weakening of every site in `SITES` and returns one row per
/// mutant. Panics if the equivalence list names a site or weakening that does not exist.
pub fn run_all() -> Vec<Row> {
    for e in EQUIVALENTS {
        assert!(
            SITES.iter().any(|s| s.name() == e.site.name()),
            "EQUIVALENTS names {}, which is not in SITES",
            e.site.name()
        );
        assert!(
            e.site.weakenings().contains(&e.weakening),
            "EQUIVALENTS names {:?}, not a weakening of {}",
            e.weakening,
            e.site.name()
        );
    }
    let mut rows = Vec::new();
    for &site in SITES {
        for &w in site.weakenings() {
            let start = Instant::now();
            let mut by = Vec::new();
            let mut first = None;
            for model in MODELS {
                let failed = with_weakened(site, w, || {
                    crate::fails_quietly(|| {
                        (model.run)();
                    })
                })
                .expect("a weakening from site.weakenings(), never nested");
                if let Some(msg) = failed {
                    by.push(model.name);
                    first.get_or_insert(msg);
                }
            }
            let verdict = match (equivalent(site, w), first) {
                (None, Some(message)) => Verdict::Killed { by, message },
                (None, None) => Verdict::Survived,
                (Some(e), None) => Verdict::Equivalent(e.reason),
                (Some(_), Some(message)) => Verdict::EquivalentKilled { by, message },
            };
            rows.push(Row {
                site: site.name(),
                weakening: Mutation::Weaken(w),
                verdict,
                time: start.elapsed(),
            });
        }
    }
    for &mutant in CODE_MUTANTS {
        let start = Instant::now();
        let mut by = Vec::new();
        let mut first = None;
        for model in MODELS {
            let failed = with_code_mutant(mutant, || {
                crate::fails_quietly(|| {
                    (model.run)();
                })
            })
            .expect("never nested");
            if let Some(msg) = failed {
                by.push(model.name);
                first.get_or_insert(msg);
            }
        }
        let equivalent = CODE_EQUIVALENTS.iter().find(|e| e.mutant == mutant);
        let verdict = match (equivalent, first) {
            (None, Some(message)) => Verdict::Killed { by, message },
            (None, None) => Verdict::Survived,
            (Some(e), None) => Verdict::Equivalent(e.reason),
            (Some(_), Some(message)) => Verdict::EquivalentKilled { by, message },
        };
        rows.push(Row {
            site: "code (sharded)",
            weakening: Mutation::Code(mutant),
            verdict,
            time: start.elapsed(),
        });
    }
    rows
}

fn weakening_name(w: Mutation) -> String {
    match w {
        Mutation::Weaken(Weakening::To(o)) => format!("-> {o:?}"),
        Mutation::Weaken(Weakening::Removed) => "removed".to_owned(),
        Mutation::Code(m) => format!("{m:?}"),
    }
}

/// The first line of a panic message without `assert_eq!`'s prefix, cut to `max` characters.
fn short(msg: &str, max: usize) -> String {
    let line = msg.lines().next().unwrap_or("");
    let line = line
        .strip_prefix("assertion `left == right` failed: ")
        .unwrap_or(line);
    if line.chars().count() <= max {
        line.to_owned()
    } else {
        let cut: String = line.chars().take(max - 3).collect();
        format!("{cut}...")
    }
}

/// The table: `site | declared | weakening | verdict | by which model | reason`, one line per
/// mutant, as Markdown.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::new();
    out.push_str("| site | declared | weakening | verdict | by which model | reason |\n");
    out.push_str("|---|---|---|---|---|---|\n");
    for row in rows {
        let declared = SITES
            .iter()
            .find(|s| s.name() == row.site)
            .map_or("-".to_owned(), |s| format!("{:?}", s.declared()));
        let (verdict, by, reason) = match &row.verdict {
            Verdict::Killed { by, message } => ("killed", by.join(", "), short(message, 90)),
            Verdict::Survived => (
                "SURVIVED",
                "-".to_owned(),
                "no model failed: a model is missing".to_owned(),
            ),
            Verdict::Equivalent(reason) => ("equivalent", "-".to_owned(), (*reason).to_owned()),
            Verdict::EquivalentKilled { by, message } => (
                "EQUIVALENT BUT KILLED",
                by.join(", "),
                format!("listed as equivalent, yet: {}", short(message, 70)),
            ),
        };
        let _ = writeln!(
            out,
            "| {} | {declared} | {} | {verdict} | {by} | {reason} |",
            row.site,
            weakening_name(row.weakening),
        );
    }
    out
}
