//! The ordering mutation table: every site of `nohz::internals::SITES`, every strictly weaker form
//! of it, every model of `loom_tests::mutants::MODELS`. Fails if a mutant not listed as
//! equivalent survives, or if a listed equivalent is killed. `ci/mutants.sh` runs it and
//! shows the table; `ci/loom.sh` runs it with the other models.
//!
//! One test in a binary of its own: the runner silences the process-wide panic hook while a
//! mutant's models fail, which must not hide another test's failure.
#![cfg(nohz_loom)]

use loom_tests::mutants::{MODELS, baseline, run_all, table};
use std::time::Instant;

#[test]
fn every_site_every_weakening_every_model() {
    let start = Instant::now();
    let base = baseline();
    println!("baseline (declared orderings): executions explored, and per case");
    for (name, explored) in &base {
        println!("  {name}: {} {:?}", explored.executions, explored.cases);
    }
    assert_eq!(base.len(), MODELS.len());
    let rows = run_all();
    println!();
    print!("{}", table(&rows));
    println!();
    println!(
        "{} mutants x {} models in {:.1} s",
        rows.len(),
        MODELS.len(),
        start.elapsed().as_secs_f64()
    );
    let bad: Vec<String> = rows
        .iter()
        .filter(|r| r.verdict.is_failure())
        .map(|r| format!("{} {:?}: {:?}", r.site, r.weakening, r.verdict))
        .collect();
    assert!(
        bad.is_empty(),
        "mutation table not clean:\n{}",
        bad.join("\n")
    );
}
