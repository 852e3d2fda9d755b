//! The model bodies, one module per obligation or protocol (spec §6 numbering).
//!
//! Each `pub fn` here is one complete `loom` model: it builds a fresh machine per execution,
//! runs the crate's real code on up to four threads (the main thread plays one CPU), asserts
//! the obligation, and returns what it explored (`Explored`). A model panics with a
//! message naming the obligation when an execution breaks it, which is how a mutant is killed.
//!
//! | module | obligation / protocol | ordering sites whose weakening it kills |
//! |---|---|---|
//! | [`o1_o2`] | O1, O2: nohz_balance_enter_idle against an ILB pass | both O1/O2 fences |
//! | [`o3`] | O3: csd ownership through `nohz_flags` | both O3 RMWs (all but the two loom-equivalents) |
//! | [`o5`] | O5: enter/exit against a busy CPU's tick and kick | none: it proves what holds with `Relaxed` |
//! | [`seed001`] | seed 001: a NO_HZ_FULL CPU going idle becomes visible (O1/O2 on that path) | both O1/O2 fences |
//! | [`o7`] | O7 (`Scalable`): read-before-write of the nohz flags on both nohz_balance_enter_idle paths | both O1/O2 fences, the `Scalable` repeat fence |
//! | [`o8`] | O8: NEWILB against remote kicks and the csd handler | none: nothing is published through NEWILB |
//! | [`hotplug`] | `sched_cpu_deactivate` against the dying CPU's idle entry and a kicker | none: the crate's steps are `Relaxed`, the grace period is the platform's |
//! | [`rebuild`] | `rebuild_sched_domains` (twice) against idle entry and exit: the LLC busy count matches `nohz_idle` | `sched.domains.publish`, `sched.domains.load` |
//! | [`irqtime`] | spec §8: flipping `sched_clock_irqtime` against accounting | none: the key is `Relaxed` |
//! | [`sharded`] | `Sharded` (spec `sharded-idle.md` §2.7, L1-L8): S1, S2, O1/O2 over shard words, owner bits; L7 the rejected exact summary | `nohz.find_new_ilb.gc_fence`, both O1/O2 fences, and the code mutants of `nohz::internals::CodeMutant` |
//! | [`idle_flush`] | the elided kick IPI (`set_nr_if_polling`) against `do_idle`'s exit flush: no kick stranded behind a busy csd | none: the crate's accesses are `Relaxed`; it kills the kernel-step mutant `IdleExitNoFlush` (`ci/patch-mutants.py`) and either half of the platform's contract made `Relaxed` |
//! | [`blocked_load`] | `update_blocked_load_status`: the ILB's clear of `rq.has_blocked_load` against the owner's new set | none: all `Relaxed`; it kills the unconditional clear |
//!
//! Every model boots its machine with the shared rig (`nohz_testing::World::shared`: every
//! CPU of its capacity, the clock at 0, the machine and platform in loom `Arc`s) and plays the
//! scheduler's side with `nohz_testing::{set_busy, set_idle}`.
//!
//! Every model declares the outcomes its race must reach (`CASES`); the tests assert that each
//! was reached by some execution, so no model passes by never exploring its race.

pub mod blocked_load;
pub mod hotplug;
pub mod idle_flush;
pub mod irqtime;
pub mod o1_o2;
pub mod o3;
pub mod o5;
pub mod o7;
pub mod o8;
pub mod rebuild;
pub mod seed001;
pub mod sharded;
