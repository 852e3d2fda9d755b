//! The named-site mechanism under loom: a site's declared ordering reaches the model, and each
//! weakening a mutation run applies really changes what loom explores.
//!
//! The model is store buffering, the shape of the crate's O1/O2 obligations: each side stores,
//! runs a SeqCst fence, then loads the other side's flag; "both loads miss both stores" is
//! forbidden only while both fences are SeqCst.
#![cfg(nohz_loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use loom::thread;
use nohz::sync::mutation::{MutationError, with_weakened};
use nohz::sync::{Ordering, Site, Weakening};
use std::panic::{AssertUnwindSafe, catch_unwind};

static FENCE_A: Site = Site::fence_site(
    "loom-tests.sb.fence_a",
    Ordering::SeqCst,
    "O1 (shape)",
    "loom-tests.sb.fence_b",
    "A's load missing B's store while B's load misses A's store",
);
static FENCE_B: Site = Site::fence_site(
    "loom-tests.sb.fence_b",
    Ordering::SeqCst,
    "O1 (shape)",
    "loom-tests.sb.fence_a",
    "B's load missing A's store while A's load misses B's store",
);

fn store_buffering() {
    loom_tests::model(|| {
        let x = Arc::new(AtomicUsize::new(0));
        let y = Arc::new(AtomicUsize::new(0));
        let (x1, y1) = (x.clone(), y.clone());
        let a = thread::spawn(move || {
            x1.store(1, Relaxed);
            FENCE_A.fence();
            y1.load(Relaxed)
        });
        y.store(1, Relaxed);
        FENCE_B.fence();
        let seen_by_b = x.load(Relaxed);
        let seen_by_a = a.join().unwrap();
        assert!(
            seen_by_a == 1 || seen_by_b == 1,
            "store buffering: both loads missed both stores"
        );
    });
}

#[test]
fn declared_fences_forbid_store_buffering() {
    store_buffering();
}

#[test]
fn every_weakening_of_either_fence_is_killed() {
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut survivors = Vec::new();
    for site in [&FENCE_A, &FENCE_B] {
        for &w in site.weakenings() {
            let killed = catch_unwind(AssertUnwindSafe(|| {
                with_weakened(site, w, store_buffering).unwrap()
            }))
            .is_err();
            if !killed {
                survivors.push((site.name(), w));
            }
        }
    }
    std::panic::set_hook(quiet);
    assert!(survivors.is_empty(), "mutants survived: {survivors:?}");
    // After the runs the declared orderings are back in force.
    store_buffering();
}

#[test]
fn only_strictly_weaker_single_mutations_are_accepted() {
    assert_eq!(
        with_weakened(&FENCE_A, Weakening::To(Ordering::SeqCst), || ()),
        Err(MutationError::NotWeaker)
    );
    assert_eq!(
        with_weakened(&FENCE_A, Weakening::To(Ordering::Relaxed), || ()),
        Err(MutationError::NotWeaker),
        "a fence is removed, never made Relaxed"
    );
    let nested = with_weakened(&FENCE_A, Weakening::Removed, || {
        with_weakened(&FENCE_B, Weakening::Removed, || ())
    });
    assert_eq!(nested, Ok(Err(MutationError::Nested)));
}
