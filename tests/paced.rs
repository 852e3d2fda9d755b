//! `Paced` (`src/beyond/paced.rs`) against `Patched` on the kernel paths: what it changes
//! (a kick that wants balancing carries STATS only when `nohz.next_blocked` is due; a pass
//! with BALANCE alone balances without refreshing blocked load and without the kernel's
//! warning; `find_new_ilb` starts from a hash of `jiffies`), and that everything else reads
//! and writes as `Patched` does. The kernel-path tests (`tests/kernel`) run `Paced` too, but
//! for those that expect STATS with every balance kick or the BALANCE-alone warning
//! (`for_each_policy!(except Paced: ..)`): the tests here pin those differences; the
//! reference model says them (`tests/model`, `paced_machine_follows_the_model`).

use nohz::platform::{NewidleDomain, NewidleOutcome};
use nohz::{
    IDLE_HOLD_JIFFIES, Jiffies, KickDecision, KickOutcome, NohzFlags, Paced, Patched, Policy,
    SCHED_MIGRATION_COST_NS, Warning,
};
use nohz_testing::{CPUS, Event, World};
use std::collections::BTreeMap;

const S: NohzFlags = NohzFlags::STATS;
const B: NohzFlags = NohzFlags::BALANCE;
const X: NohzFlags = NohzFlags::NEXT;

/// Registered idle CPUs 2 and 3, CPU 0 with `n` tasks, CPU 1 with one; a STATS|NEXT pass done,
/// so STATS is not due for `LOAD_AVG_PERIOD` and NEXT is not wanted; balancing is due now.
/// (The setup of `tests/kernel/nohz_balancer_kick.rs`.)
fn setup<P: Policy>(n: u32) -> World<P> {
    let w = World::<P>::new(4);
    w.enter(2);
    w.enter(3);
    w.m.nohz_idle_balance_pass(w.cpu(3), S | X, &*w.p);
    assert!(!w.m.nohz().needs_update());
    assert_eq!(w.m.nohz().next_balance(), w.now());
    w.busy(0, n);
    w.busy(1, 1);
    w.p.take_events();
    w
}

fn flags_of(d: KickDecision<CPUS>) -> NohzFlags {
    match d {
        KickDecision::Kick { flags, .. } => flags,
        other => panic!("expected a kick, got {other:?}"),
    }
}

/// `nohz.has_blocked_load` set and `jiffies` past `nohz.next_blocked`: STATS due.
fn stats_due<P: Policy>(w: &World<P>) -> bool {
    w.m.nohz().has_blocked_load() && w.now().is_after(w.m.nohz().next_blocked())
}

#[test]
fn a_balance_kick_carries_stats_only_once_next_blocked_is_due() {
    let (pa, pt) = (setup::<Paced>(2), setup::<Patched>(2));
    // Due balancing, blocked load not due: Patched asks STATS|BALANCE, Paced BALANCE alone.
    assert_eq!(flags_of(pt.tick(0).unwrap()), S | B);
    assert!(!stats_due(&pa));
    assert_eq!(flags_of(pa.tick(0).unwrap()), B);
    // Past next_blocked with blocked load left: both ask STATS|BALANCE.
    fn past_next_blocked<P: Policy>(w: &World<P>) -> NohzFlags {
        w.m.rq(w.cpu(2)).set_next_balance(w.now().add(1000));
        w.m.rq(w.cpu(3)).set_next_balance(w.now().add(1000));
        w.enter(2);
        w.advance(40);
        assert!(stats_due(w));
        flags_of(w.tick(0).unwrap())
    }
    assert_eq!(past_next_blocked(&pa), S | B);
    assert_eq!(past_next_blocked(&pt), S | B);
    // NEXT still joins: CPU 1 registers; next jiffy (BALANCE moved next_balance there).
    pa.advance(1);
    pa.enter(1);
    assert!(pa.m.nohz().needs_update());
    let f = flags_of(pa.tick(0).unwrap());
    assert_eq!(f & (B | X), B | X);
    assert_eq!(f.contains(S), stats_due(&pa));
}

/// Every reason `nohz_balancer_kick_due` wants balancing takes the same paced flags: BALANCE
/// without STATS while `nohz.next_blocked` is not due (the kernel-path tests of these reasons,
/// which expect STATS|BALANCE, leave `Paced` out).
#[test]
fn every_balance_reason_is_paced_the_same_way() {
    // Two tasks.
    let w = setup::<Paced>(2);
    assert_eq!(flags_of(w.tick(0).unwrap()), B);
    // The LLC's busy count (one task each on CPUs 0 and 1, one LLC).
    let w = setup::<Paced>(1);
    assert!(w.busy_count(0) > 1);
    assert_eq!(flags_of(w.tick(0).unwrap()), B);
    // Lost capacity, LLCs split so the busy count does not decide.
    let w = setup::<Paced>(1);
    w.p.set_llc_size(1);
    w.rebuild();
    assert_eq!(
        w.m.nohz_balancer_kick(w.cpu(0), &*w.p),
        KickDecision::NoFlags
    );
    w.m.rq(w.cpu(0)).set_cpu_capacity(800);
    assert_eq!(flags_of(w.m.nohz_balancer_kick(w.cpu(0), &*w.p)), B);
    // A misfit task on an asymmetric-capacity machine (the LLC count not consulted).
    let w = setup::<Paced>(1);
    w.p.set_asym_cpucapacity(true);
    assert_eq!(
        w.m.nohz_balancer_kick(w.cpu(0), &*w.p),
        KickDecision::NoFlags
    );
    w.m.rq(w.cpu(0)).set_misfit_task_load(10);
    assert_eq!(flags_of(w.m.nohz_balancer_kick(w.cpu(0), &*w.p)), B);
    // An idle CPU that asym packing prefers.
    let w = setup::<Paced>(1);
    w.p.set_llc_size(1);
    w.rebuild();
    w.p.set_asym_packing(w.cpu(0), Some(5));
    w.p.set_asym_packing(w.cpu(2), Some(9));
    assert_eq!(flags_of(w.m.nohz_balancer_kick(w.cpu(0), &*w.p)), B);
    // NEXT joins, STATS still not due.
    let w = setup::<Paced>(2);
    w.enter(1);
    assert!(!stats_due(&w));
    assert_eq!(flags_of(w.m.nohz_balancer_kick(w.cpu(0), &*w.p)), B | X);
}

/// What the kick decides when balancing is not due, and its early returns, are Patched's:
/// one candidate ILB, so the pick is forced too.
#[test]
fn not_due_and_early_returns_match_patched() {
    fn script<P: Policy>() -> Vec<KickDecision<CPUS>> {
        let w = setup::<P>(2);
        let mut out = Vec::new();
        // Balancing not due (a NEXT pass took the idle CPUs' deadlines, 10 ahead).
        for i in [2, 3] {
            w.m.rq(w.cpu(i)).set_next_balance(w.now().add(10));
        }
        w.m.nohz_idle_balance_pass(w.cpu(3), X, &*w.p);
        // CPU 2's first busy tick takes it out; CPU 3 is the one candidate left.
        w.busy(2, 1);
        out.push(w.tick(2).unwrap());
        out.push(w.m.nohz_balancer_kick(w.cpu(0), &*w.p));
        // Not due, blocked load due: STATS alone goes out.
        w.advance(40);
        w.m.rq(w.cpu(3)).set_next_balance(w.now().add(10));
        w.m.nohz_idle_balance_pass(w.cpu(3), X, &*w.p);
        w.advance(1);
        w.enter(3);
        out.push(w.m.nohz_balancer_kick(w.cpu(0), &*w.p));
        w.m.nohz_csd_ipi(w.cpu(3), &*w.p);
        // NEXT alone: CPU 1 registers.
        w.enter(1);
        out.push(w.m.nohz_balancer_kick(w.cpu(0), &*w.p));
        // An idle tick, and an empty mask once balancing is due.
        w.m.rq(w.cpu(3)).set_curr_is_idle(true);
        out.push(w.m.nohz_balancer_kick(w.cpu(3), &*w.p));
        for i in [1, 3] {
            w.busy(i, 1);
            w.tick(i);
        }
        w.advance(20);
        out.push(w.m.nohz_balancer_kick(w.cpu(0), &*w.p));
        out
    }
    let pa = script::<Paced>();
    assert_eq!(pa, script::<Patched>());
    assert_eq!(pa[0..2], [KickDecision::NoFlags; 2], "{pa:?}");
    assert!(
        matches!(pa[2], KickDecision::Kick { flags: S, .. }),
        "{pa:?}"
    );
    assert!(
        matches!(pa[3], KickDecision::Kick { flags, .. } if flags == S | X),
        "{pa:?}"
    );
    assert_eq!(pa[4..], [KickDecision::IdleTick, KickDecision::EmptyMask]);
}

#[test]
fn a_balance_pass_without_stats_balances_the_due_cpus_and_leaves_blocked_load_alone() {
    let w = World::<Paced>::new(4);
    w.enter(1);
    w.enter(2);
    w.advance(1);
    let (nbl, blocked) = (w.m.nohz().next_blocked(), w.m.nohz().has_blocked_load());
    assert!(blocked);
    w.p.take_events();
    w.m.nohz_idle_balance_pass(w.cpu(2), B, &*w.p);
    assert_eq!(w.m.warnings().of_kind(Warning::BalanceWithoutStats), 0);
    assert_eq!(w.warnings(), 0);
    assert!(w.decayed().is_empty(), "no blocked-load refresh");
    let balanced: Vec<usize> = w
        .events()
        .iter()
        .filter_map(|e| match e {
            Event::BalanceDomains { cpu, .. } => Some(cpu.index()),
            _ => None,
        })
        .collect();
    assert_eq!(
        balanced,
        [1, 2],
        "both due CPUs, from after the ILB round to it"
    );
    assert_eq!(w.m.nohz().next_blocked(), nbl);
    assert!(
        w.m.nohz().has_blocked_load(),
        "still set for the STATS pass"
    );
    // Patched counts the kernel's WARN for the same flags.
    let pt = World::<Patched>::new(4);
    pt.enter(2);
    pt.m.nohz_idle_balance_pass(pt.cpu(2), B, &*pt.p);
    assert_eq!(pt.m.warnings().of_kind(Warning::BalanceWithoutStats), 1);
}

/// Over a run of balance kicks, one a jiffy: the blocked load of each idle CPU is refreshed
/// once per STATS deadline under Paced, on every pass under Patched.
#[test]
fn blocked_load_is_refreshed_once_per_load_avg_period_not_every_jiffy() {
    fn decays<P: Policy>() -> (usize, usize, usize) {
        let w = World::<P>::new(8);
        for i in 1..8 {
            w.enter(i);
        }
        w.busy(0, 2);
        let (mut passes, mut stats) = (0, 0);
        for _ in 0..64 {
            w.advance(1);
            // Idle CPUs keep blocked load (they ran and idled again) and are due.
            for i in 1..8 {
                w.enter(i);
                w.m.rq(w.cpu(i)).set_next_balance(w.now());
            }
            if let Some(KickDecision::Kick {
                flags,
                outcome: KickOutcome::Sent(ilb),
            }) = w.tick(0)
            {
                // The IPI frees the csd; the ILB runs the pass with the kick's flags.
                w.m.nohz_csd_ipi(ilb, &*w.p);
                w.m.nohz_idle_balance_pass(ilb, flags, &*w.p);
                passes += 1;
                stats += usize::from(flags.contains(S));
            }
        }
        (passes, stats, w.decayed().len())
    }
    let (pt_passes, pt_stats, pt_decays) = decays::<Patched>();
    let (pa_passes, pa_stats, pa_decays) = decays::<Paced>();
    assert_eq!(pt_stats, pt_passes);
    // Paced: STATS at the start and once per LOAD_AVG_PERIOD (32 jiffies) after, each
    // refreshing every idle CPU (a repeat idle entry re-arms its blocked load, as Patched's).
    assert!((2..=3).contains(&pa_stats), "{pa_stats}");
    assert_eq!(pa_decays, pa_stats * 7);
    // A balance pass whenever nohz.next_balance is due (the host platform's domains ask
    // again a few jiffies on), under both.
    assert!(
        pt_passes >= 16 && pa_passes >= 16,
        "{pt_passes} {pa_passes}"
    );
    // Patched: every pass refreshes every idle CPU (7 a pass).
    assert_eq!(pt_decays, pt_passes * 7);
    // Paced: only the passes at the STATS deadline (every LOAD_AVG_PERIOD = 32 jiffies).
    assert!(pa_decays <= 3 * 7, "{pa_decays}");
    assert!(
        pa_decays >= 7,
        "the STATS deadline still refreshes: {pa_decays}"
    );
}

#[test]
fn the_ilb_pick_spreads_over_jiffies_and_is_always_an_idle_housekeeping_cpu_but_the_kicker() {
    let w = World::<Paced, 64, 1>::new(16);
    for i in 1..16 {
        w.enter(i);
    }
    // CPU 4 NO_HZ_FULL (not housekeeping); CPU 7 got a wakeup; CPU 9 kicks for itself.
    w.m.housekeeping().clear(w.cpu(4));
    w.m.rq(w.cpu(7)).set_ttwu_pending(true);
    let mut picks: BTreeMap<usize, usize> = BTreeMap::new();
    for j in 0..4096usize {
        let now = Jiffies::new(j.wrapping_sub(1000));
        for kicker in [0, 9] {
            let ilb = w.m.find_new_ilb_at(w.cpu(kicker), now).unwrap().index();
            assert!(![4, 7, kicker].contains(&ilb), "jiffies {j}: picked {ilb}");
            assert!(w.m.nohz_idle_test(w.cpu(ilb)));
            *picks.entry(ilb).or_default() += 1;
        }
        // One jiffy, one pick: every kicker that is not the pick gets the same CPU, so the
        // kicks of one jiffy ride along on one kick as the kernel's do.
        let a = w.m.find_new_ilb_at(w.cpu(0), now);
        assert_eq!(w.m.find_new_ilb_at(w.cpu(0), now), a);
    }
    // Every eligible CPU gets a share; none more than three times the fair one.
    let eligible = 15 - 2;
    assert_eq!(picks.len(), eligible, "{picks:?}");
    let fair = 2 * 4096 / eligible;
    assert!(picks.values().all(|&n| n <= 3 * fair), "{picks:?}");
    // Patched always takes the lowest.
    let pt = World::<Patched, 64, 1>::new(16);
    for i in 1..16 {
        pt.enter(i);
    }
    for j in [0usize, 1, 2, 77] {
        let ilb = pt.m.find_new_ilb_at(pt.cpu(0), Jiffies::new(j));
        assert_eq!(ilb, Some(pt.cpu(1)));
    }
}

#[test]
fn the_ilb_pick_through_kick_ilb_is_the_hashed_one_and_none_when_none_is_idle() {
    let w = World::<Paced>::new(8);
    for i in [2, 5, 6] {
        w.enter(i);
    }
    w.busy(0, 2);
    let want = w.m.find_new_ilb_at(w.cpu(0), w.now());
    assert_eq!(
        w.m.kick_ilb(w.cpu(0), B, &*w.p),
        KickOutcome::Sent(want.unwrap())
    );
    // The only registered CPU is the kicker: no ILB, as the kernel's.
    let w = World::<Paced>::new(4);
    w.enter(1);
    assert_eq!(w.m.find_new_ilb_at(w.cpu(1), w.now()), None);
    assert_eq!(w.m.kick_ilb(w.cpu(1), B, &*w.p), KickOutcome::NoIlb);
}

/// No new state, so no new shared line: the machine is byte for byte Patched's size, and idle
/// entry, exit and the kick leave the `nohz` scalars as Patched's do.
#[test]
fn no_new_state_and_the_same_nohz_writes_on_entry_exit_and_kick() {
    assert_eq!(
        std::mem::size_of::<nohz::Machine<Paced, CPUS, 1>>(),
        std::mem::size_of::<nohz::Machine<Patched, CPUS, 1>>()
    );
    fn scalars<P: Policy>(w: &World<P>) -> (bool, bool, Jiffies, Jiffies, Vec<usize>) {
        let n = w.m.nohz();
        (
            n.has_blocked_load(),
            n.needs_update(),
            n.next_balance(),
            n.next_blocked(),
            w.mask(),
        )
    }
    fn script<P: Policy>() -> Vec<(bool, bool, Jiffies, Jiffies, Vec<usize>)> {
        let w = World::<P>::new(4);
        let mut out = vec![scalars(&w)];
        w.enter(3);
        out.push(scalars(&w));
        w.enter(3);
        out.push(scalars(&w));
        w.busy(0, 2);
        w.tick(0);
        out.push(scalars(&w));
        w.busy(3, 1);
        w.tick(3);
        out.push(scalars(&w));
        out
    }
    assert_eq!(script::<Paced>(), script::<Patched>());
}

/// The idle set is the kernel's flat mask under another scan start: registration, the
/// emptiness test, the ILB pass's walk and the asym-packing scan read it as Patched's.
#[test]
fn the_idle_set_reads_as_patched_s() {
    type Snap = (Vec<usize>, Vec<bool>, bool);
    fn snap<P: Policy>(w: &World<P>) -> Snap {
        let tested = (0..6).map(|i| w.m.nohz_idle_test(w.cpu(i))).collect();
        (w.mask(), tested, w.m.nohz_anyone_tickless(w.cpu(0)))
    }
    fn script<P: Policy>() -> Vec<Snap> {
        let w = World::<P>::new(6);
        let mut out = vec![snap(&w)];
        for i in [4, 1, 5] {
            w.enter(i);
            out.push(snap(&w));
        }
        w.busy(4, 1);
        w.tick(4);
        out.push(snap(&w));
        for i in [1, 5] {
            w.busy(i, 1);
            w.tick(i);
        }
        out.push(snap(&w));
        out
    }
    let pa = script::<Paced>();
    assert_eq!(pa, script::<Patched>());
    assert_eq!(pa[3].0, [1, 4, 5]);
    assert!(!pa.last().unwrap().2, "nobody tickless at the end");

    // The ILB pass walks after the ILB and round to it, decaying each registered CPU.
    let w = World::<Paced>::new(6);
    for i in [1, 2, 4] {
        w.enter(i);
    }
    w.advance(1);
    w.p.take_events();
    w.m.nohz_idle_balance_pass(w.cpu(2), S, &*w.p);
    assert_eq!(w.decayed(), [4, 1, 2]);

    // Asym packing: the kick's scan of the idle set finds the preferred idle CPU.
    let w = setup::<Paced>(1);
    w.p.set_llc_size(1);
    w.rebuild();
    w.p.set_asym_packing(w.cpu(0), Some(5));
    w.p.set_asym_packing(w.cpu(3), Some(4));
    assert_eq!(
        w.m.nohz_balancer_kick(w.cpu(0), &*w.p),
        KickDecision::NoFlags
    );
    w.p.set_asym_packing(w.cpu(2), Some(9));
    assert_eq!(flags_of(w.m.nohz_balancer_kick(w.cpu(0), &*w.p)), B);
}

/// NEXT alone is not kicked while `nohz.next_balance` is at most a jiffy ahead (the next
/// BALANCE kick carries it); it is kicked as Patched's once it is further ahead, and it rides
/// on every other flag.
#[test]
fn next_alone_waits_for_the_balance_kick_a_jiffy_away() {
    fn next_alone<P: Policy>(ahead: usize) -> KickDecision<CPUS> {
        let w = setup::<P>(2);
        for i in [2, 3] {
            w.m.rq(w.cpu(i)).set_next_balance(w.now().add(ahead));
        }
        w.m.nohz_idle_balance_pass(w.cpu(3), X, &*w.p);
        assert_eq!(w.m.nohz().next_balance(), w.now().add(ahead));
        // CPU 1 registers: NEXT wanted, balancing not due, blocked load not due.
        w.enter(1);
        assert!(w.m.nohz().needs_update() && !stats_due(&w));
        w.m.nohz_balancer_kick(w.cpu(0), &*w.p)
    }
    assert_eq!(next_alone::<Paced>(1), KickDecision::NoFlags);
    assert!(matches!(
        next_alone::<Patched>(1),
        KickDecision::Kick { flags: X, .. }
    ));
    for ahead in [2, 10] {
        assert_eq!(next_alone::<Paced>(ahead), next_alone::<Patched>(ahead));
        assert!(matches!(
            next_alone::<Paced>(ahead),
            KickDecision::Kick { flags: X, .. }
        ));
    }
    // With balancing due, NEXT joins the BALANCE kick.
    let w = setup::<Paced>(2);
    w.enter(1);
    assert_eq!(flags_of(w.tick(0).unwrap()), B | X);
}

/// A fresh 4-CPU world whose CPU 3, its `rq->next_balance` `ahead` jiffies on and its
/// `avg_idle` a migration's cost, runs its newidle look at jiffy `look`: it reads `sd(look)` of
/// the base domain and, if it walks, reports `pulled` and the same deadline. Returns the world
/// and CPU 3's `rq->next_balance` after the look, in jiffies from it.
fn newidle_look<P: Policy>(
    ahead: usize,
    sd: impl FnOnce(Jiffies) -> NewidleDomain,
    pulled: bool,
) -> (World<P>, usize) {
    let w = World::<P>::new(4);
    let c3 = w.cpu(3);
    let look = w.now();
    w.m.rq(c3).set_next_balance(look.add(ahead));
    w.m.rq(c3).set_avg_idle(SCHED_MIGRATION_COST_NS);
    let sd = sd(look);
    w.p.set_newidle_domain(sd);
    w.p.set_newidle_outcome(NewidleOutcome {
        pulled_task: pulled,
        next_balance: sd.next_balance,
    });
    assert_eq!(w.m.sched_balance_newidle(c3, &*w.p), pulled);
    let held = w.m.rq(c3).next_balance().since(look);
    (w, held)
}

/// The base domain as `newidle_look` reads it: the root domain `overloaded` or not, a walk
/// costing `cost` ns, its deadline `deadline`.
fn base_domain(overloaded: bool, cost: u64, deadline: Option<Jiffies>) -> NewidleDomain {
    NewidleDomain {
        rd_overloaded: overloaded,
        max_newidle_lb_cost: cost,
        next_balance: deadline,
    }
}

/// CPU 3 runs its newidle look at jiffy `look` and finds nothing to pull (no overloaded CPU in
/// the root domain); its base domain's deadline is `look` itself (its busy period left
/// `last_balance` old). Patched pulls `rq->next_balance` in to it, so an ILB pass in the same
/// jiffy already balances CPU 3. Paced holds it at `look + IDLE_HOLD_JIFFIES`: the passes of
/// this jiffy and the next leave CPU 3 alone, the one after balances it. A walk that pulled
/// nothing is held too; a look that pulled a task, or one skipped for too short an expected
/// idle, is held by neither; no hold moves a later deadline earlier, and none is stored where
/// the kernel stores nothing.
#[test]
fn a_cpu_is_balanced_on_behalf_of_idle_once_it_has_stayed_idle_through_a_jiffy() {
    /// `rq->next_balance` after the look, relative to it; and the first of 0..4 jiffies on at
    /// which a pass by CPU 2 balances CPU 3 (one pass a jiffy).
    fn first_balance<P: Policy>() -> (usize, Option<usize>) {
        let (w, held) = newidle_look::<P>(64, |look| base_domain(false, 0, Some(look)), false);
        w.enter(2);
        w.enter(3);
        for j in 0..4 {
            w.advance(usize::from(j > 0));
            w.p.take_events();
            w.m.nohz_idle_balance_pass(w.cpu(2), S | B, &*w.p);
            let balanced = w
                .events()
                .iter()
                .any(|e| matches!(e, Event::BalanceDomains { cpu, .. } if cpu.index() == 3));
            if balanced {
                return (held, Some(j));
            }
        }
        (held, None)
    }
    assert_eq!(first_balance::<Patched>(), (0, Some(0)));
    assert_eq!(IDLE_HOLD_JIFFIES, 2);
    assert_eq!(first_balance::<Paced>(), (2, Some(2)));

    // A walk that pulled a task: held by neither.
    let pull = |look| base_domain(true, 0, Some(look));
    assert_eq!(newidle_look::<Paced>(64, pull, true).1, 0);
    assert_eq!(newidle_look::<Patched>(64, pull, true).1, 0);

    /// `rq->next_balance` after a look with the root domain overloaded, relative to it: a
    /// walk that pulled nothing (`walks`), or one skipped because the CPU's expected idle
    /// (`avg_idle`) is shorter than the walk's cost, which looked at nothing.
    fn after_an_overloaded_look<P: Policy>(walks: bool) -> usize {
        let cost = if walks {
            0
        } else {
            SCHED_MIGRATION_COST_NS + 1
        };
        let (w, held) = newidle_look::<P>(64, |look| base_domain(true, cost, Some(look)), false);
        let walked = w
            .events()
            .iter()
            .any(|e| matches!(e, Event::NewidleBalance { .. }));
        assert_eq!(walked, walks);
        held
    }
    assert_eq!(after_an_overloaded_look::<Paced>(true), 2);
    assert_eq!(after_an_overloaded_look::<Patched>(true), 0);
    assert_eq!(after_an_overloaded_look::<Paced>(false), 0);
    assert_eq!(after_an_overloaded_look::<Patched>(false), 0);

    // A look that pulled nothing and found no earlier deadline than the CPU's own, 64 jiffies
    // on: the hold never moves a later deadline earlier.
    let none = |_| base_domain(false, 0, None);
    assert_eq!(newidle_look::<Paced>(64, none, false).1, 64);
    assert_eq!(newidle_look::<Patched>(64, none, false).1, 64);

    // A look that found nothing to pull while the CPU's own deadline was already due (the
    // look's jiffy) and the look's later (5 on): the kernel keeps the due deadline (it stores
    // nothing), and so does the hold, which stores only where the kernel does.
    let later = |look: Jiffies| base_domain(false, 0, Some(look.add(5)));
    assert_eq!(newidle_look::<Patched>(0, later, false).1, 0);
    assert_eq!(newidle_look::<Paced>(0, later, false).1, 0);
}
