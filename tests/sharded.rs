//! `Sharded`'s idle set against its description (`src/beyond/sharded.rs`): the shard map
//! built at init and by `set_shard_map`, the ILB walk against the flat
//! `for_each_cpu_wrap(ilb + 1)`, the GC, `find_new_ilb` in both orders against a reference
//! written from the description, and the emptiness test's two modes on stale flags.

use nohz::sharded::{ByLlc, Contiguous, Hint, LocalFirst, LowestId, ShardMapError, Validated};
use nohz::{CpuId, CpuMask, InitError, Jiffies, Sharded, TopologyError};
use nohz_testing::World;

fn shards_of<P: nohz::Policy, const N: usize>(w: &World<P, N>) -> Vec<Vec<usize>> {
    (0..w.m.nr_shards())
        .map(|s| w.m.shard_members(s).map(CpuId::index).collect())
        .collect()
}

#[test]
fn init_splits_each_llc_at_max_in_topology_order() {
    let w = World::<Sharded<8, ByLlc<4>>, 10>::unbooted(10, Jiffies::new(0));
    w.p.set_llc_size(5);
    w.m.init(10, 0, &*w.p).unwrap();
    assert_eq!(
        shards_of(&w),
        [vec![0, 1, 2, 3], vec![4], vec![5, 6, 7, 8], vec![9]]
    );
    let at = w.m.shard_slot(w.cpu(7)).unwrap();
    assert_eq!((at.shard, at.slot), (2, 2));
    // A rebuild with another topology leaves the shards alone.
    w.p.set_llc_size(2);
    w.rebuild();
    assert_eq!(shards_of(&w)[0], [0, 1, 2, 3]);
    // A flat policy has none.
    assert_eq!(World::<nohz::Patched>::new(4).m.nr_shards(), 0);
}

/// A policy value (what a machine's `Debug` or a log shows) names its shard capacity.
#[test]
fn a_sharded_policy_debugs_as_its_shard_count() {
    assert_eq!(format!("{:?}", Sharded::<16>::default()), "Sharded<16>");
    let strict = Sharded::<2, Contiguous<1>, LowestId, Validated>::default();
    assert_eq!(format!("{strict:?}"), "Sharded<2>");
}

#[test]
fn a_map_that_does_not_fit_is_refused_with_a_clear_error() {
    let w = World::<Sharded<2, Contiguous<1>>, 3>::unbooted(3, Jiffies::new(0));
    let e = w.m.init(3, 0, &*w.p).unwrap_err();
    let want = ShardMapError::TooManyShards {
        cpu: 2,
        shard: 2,
        capacity: 2,
    };
    assert_eq!(e, InitError::Topology(TopologyError::Shards(want)));
    assert_eq!(w.m.nr_cpu_ids().get(), 0, "init changed nothing");
    assert!(format!("{e}").contains("shard 2"));

    // More than 64 CPUs in one shard.
    let w = World::<Sharded<2, Contiguous<64>>, 72, 2>::booted(70, Jiffies::new(0));
    assert_eq!(
        w.m.set_shard_map(|_| 0),
        Err(ShardMapError::ShardFull { shard: 0, cpu: 64 })
    );
    assert_eq!(w.m.shard_members(1).count(), 6, "the old map stands");
    // Not while a CPU is registered; any map once none is.
    w.enter(5);
    assert_eq!(
        w.m.set_shard_map(|c| c.index() % 2),
        Err(ShardMapError::CpuRegistered { cpu: 5 })
    );
    w.busy(5, 1);
    w.m.nohz_balance_exit_idle(w.cpu(5), &*w.p);
    w.m.set_shard_map(|c| c.index() % 2).unwrap();
    assert_eq!(w.m.shard_members(1).count(), 35);
    // A flat machine has no shards to map.
    let flat = World::<nohz::Patched>::booted(2, Jiffies::new(0));
    assert_eq!(flat.m.set_shard_map(|_| 0), Err(ShardMapError::NotSharded));
}

/// The two-level wrap walk over contiguous shards is the flat `for_each_cpu_wrap(ilb + 1)`,
/// for every set of registered CPUs, every ILB and every shard size.
fn walk_matches_flat<const K: usize>() {
    let w = World::<Sharded<8, Contiguous<K>>, 8>::booted(8, Jiffies::new(0));
    let nr = w.m.nr_cpu_ids();
    for bits in 0u32..256 {
        let flat = CpuMask::<1>::new();
        for cpu in nr.iter() {
            let at = w.m.shard_slot(cpu).unwrap();
            if bits & (1 << cpu.index()) != 0 {
                flat.set(cpu);
                w.m.shard_set_bit(at, true);
            } else {
                w.m.shard_set_bit(at, false);
            }
        }
        for ilb in nr.iter() {
            let want: Vec<usize> = flat.iter_wrap_after(ilb, nr).map(CpuId::index).collect();
            let got: Vec<usize> = w.m.shard_walk(w.m.shard_slot(ilb)).collect();
            assert_eq!(got, want, "K {K}, mask {bits:#x}, ilb {}", ilb.index());
        }
    }
}

/// Full shards of 64 CPUs (the ILB in the last slot of one, or the first): the walk is
/// still `for_each_cpu_wrap(ilb + 1)`.
#[test]
fn the_walk_over_full_shards_is_for_each_cpu_wrap() {
    let w = World::<Sharded<2, Contiguous<64>>, 128, 2>::booted(128, Jiffies::new(0));
    let nr = w.m.nr_cpu_ids();
    let flat = CpuMask::<2>::new();
    for cpu in nr.iter().filter(|c| c.index() % 3 != 1) {
        flat.set(cpu);
        w.m.shard_set_bit(w.m.shard_slot(cpu).unwrap(), true);
    }
    for ilb in [0, 62, 63, 64, 126, 127].map(|i| nr.cpu(i).unwrap()) {
        let want: Vec<usize> = flat.iter_wrap_after(ilb, nr).map(CpuId::index).collect();
        let got: Vec<usize> = w.m.shard_walk(w.m.shard_slot(ilb)).collect();
        assert_eq!(got, want, "ilb {}", ilb.index());
    }
}

#[test]
fn the_walk_over_contiguous_shards_is_for_each_cpu_wrap() {
    walk_matches_flat::<1>();
    walk_matches_flat::<2>();
    walk_matches_flat::<3>();
    walk_matches_flat::<8>();
}

/// Over random shard maps, the walk visits each registered CPU once, in the documented
/// two-level wrap order, the ILB last.
#[test]
fn over_random_maps_the_walk_visits_each_cpu_once_in_order_the_ilb_last() {
    let w = World::<Sharded<16, Contiguous<1>>, 16>::booted(16, Jiffies::new(0));
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..300 {
        let map: Vec<usize> = (0..16).map(|_| (next() % 5) as usize).collect();
        w.m.set_shard_map(|c| map[c.index()]).unwrap();
        let bits = next() as u16;
        for cpu in w.m.nr_cpu_ids().iter() {
            if bits & (1 << cpu.index()) != 0 {
                w.m.shard_set_bit(w.m.shard_slot(cpu).unwrap(), true);
            }
        }
        // The order of the module docs: after the ILB's slot the rest of its shard, the
        // shards after it in ring order, then its shard up to itself; without a place
        // (never after init), every shard from 0 as a whole.
        let nr = w.m.nr_shards();
        let members: Vec<Vec<usize>> = (0..nr)
            .map(|s| w.m.shard_members(s).map(|c| c.index()).collect())
            .collect();
        let registered = |c: &usize| bits & (1 << c) != 0;
        for ilb in w.m.nr_cpu_ids().iter() {
            let at = w.m.shard_slot(ilb).unwrap();
            let own = &members[at.shard];
            let want: Vec<usize> = own[at.slot + 1..]
                .iter()
                .chain(
                    (at.shard + 1..nr)
                        .chain(0..at.shard)
                        .flat_map(|s| &members[s]),
                )
                .chain(&own[..=at.slot])
                .copied()
                .filter(registered)
                .collect();
            let got: Vec<usize> = w.m.shard_walk(Some(at)).collect();
            assert_eq!(got, want, "from {} ({map:?})", ilb.index());
        }
        let want: Vec<usize> = members
            .iter()
            .flatten()
            .copied()
            .filter(registered)
            .collect();
        assert_eq!(
            w.m.shard_walk(None).collect::<Vec<_>>(),
            want,
            "no place ({map:?})"
        );
        for cpu in w.m.nr_cpu_ids().iter() {
            w.m.shard_set_bit(w.m.shard_slot(cpu).unwrap(), false);
        }
    }
}

/// With three shards, the GC of a stale shard clears that shard's bit and no other.
#[test]
fn the_gc_clears_exactly_the_stale_shard() {
    let w = World::<Sharded<3, Contiguous<2>, LowestId>, 6>::new(6);
    for c in [0, 2, 4] {
        w.enter(c);
    }
    w.busy(0, 1);
    w.m.nohz_balance_exit_idle(w.cpu(0), &*w.p);
    assert!(w.m.shard_flagged(0) && w.m.shard_word(0) == 0, "stale");
    // CPU 1 (shard 0) asks: shard 0 is GC'd on the way to CPU 2.
    assert_eq!(w.m.find_new_ilb(w.cpu(1)), Some(w.cpu(2)));
    assert_eq!([0, 1, 2].map(|s| w.m.shard_flagged(s)), [false, true, true]);
}

/// `LocalFirst` looks in the kicker's shard first and rotates its start slot with
/// jiffies: over 64 jiffies with every other CPU of the shard idle, no CPU is picked more
/// than twice the mean.
#[test]
fn local_first_prefers_the_kickers_shard_and_spreads_the_duty() {
    let w = World::<Sharded<2, Contiguous<8>>, 16, 1>::new(16);
    for c in 1..16 {
        w.enter(c);
    }
    w.busy(0, 2);
    let mut picks = [0u32; 16];
    for j in 0..64 {
        let ilb = w.m.find_new_ilb_at(w.cpu(0), Jiffies::new(j));
        let ilb = ilb.unwrap().index();
        assert!(ilb < 8, "the kicker's own shard first");
        picks[ilb] += 1;
    }
    let mean = 64.0 / 7.0;
    assert!(
        picks[1..8].iter().all(|&n| f64::from(n) <= 2.0 * mean),
        "{picks:?}"
    );
    // A kicker in the other shard picks there.
    w.busy(9, 2);
    let ilb = w.m.find_new_ilb_at(w.cpu(9), Jiffies::new(3));
    assert!(ilb.unwrap().index() >= 8);
}

/// One random machine state for the `find_new_ilb` differential: 16 CPUs in a random map
/// of 4 shards; each CPU busy, idle but not registered (its tick still running), idle and
/// registered, registered but busy again (its exit not run yet), or gone through a whole
/// idle period (leaving its shard's flag stale); a few CPUs out of housekeeping.
fn random_state<P: nohz::Policy>(x: &mut u64) -> World<P, 16, 1> {
    let mut next = || {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    };
    let w = World::<P, 16, 1>::booted(16, Jiffies::new(0));
    let map: Vec<usize> = (0..16).map(|_| (next() % 4) as usize).collect();
    w.m.set_shard_map(|c| map[c.index()]).unwrap();
    for c in 0..16 {
        match next() % 6 {
            0 | 1 => w.busy(c, 1),
            // Idle with its tick still running: not registered, never a candidate.
            5 => w.idle(c),
            2 => w.enter(c),
            3 => {
                w.enter(c);
                w.busy(c, 1);
            }
            _ => {
                w.enter(c);
                w.busy(c, 1);
                w.m.nohz_balance_exit_idle(w.cpu(c), &*w.p);
            }
        }
        if next() % 6 == 0 {
            w.m.housekeeping().clear(w.cpu(c));
        }
    }
    w
}

/// The spec's `find_new_ilb` over shards, written from its description (module docs):
/// the shards to visit (`LocalFirst`: the kicker's own whether flagged or not, then the
/// flagged ones in ring order after it; `LowestId`: the flagged ones ascending), each
/// from slot `rotate % width` round to it (`LowestId`: from slot 0), taking the first
/// registered CPU that is not the kicker, is housekeeping and is idle; a flagged shard
/// found empty loses its flag. Returns the pick and the flags after.
fn reference_find<P: nohz::Policy>(
    w: &World<P, 16, 1>,
    kicker: usize,
    local_first: bool,
    rotate: usize,
) -> (Option<usize>, Vec<bool>) {
    let nr = w.m.nr_shards();
    let members: Vec<Vec<usize>> = (0..nr)
        .map(|s| w.m.shard_members(s).map(|c| c.index()).collect())
        .collect();
    let mut flags: Vec<bool> = (0..nr).map(|s| w.m.shard_flagged(s)).collect();
    let home = w.m.shard_slot(w.cpu(kicker)).unwrap().shard;
    let order: Vec<(usize, bool)> = if local_first {
        core::iter::once((home, true))
            .chain((home + 1..nr).chain(0..home).map(|s| (s, false)))
            .collect()
    } else {
        (0..nr).map(|s| (s, false)).collect()
    };
    for (s, always) in order {
        if !always && !flags[s] {
            continue;
        }
        let word = w.m.shard_word(s);
        if flags[s] && word == 0 {
            flags[s] = false;
        }
        let width = members[s].len();
        let start = if local_first && width > 0 {
            rotate % width
        } else {
            0
        };
        for slot in (start..width).chain(0..start) {
            let cpu = members[s][slot];
            let c = w.cpu(cpu);
            if word & (1 << slot) != 0
                && cpu != kicker
                && w.m.housekeeping().test(c)
                && w.m.rq(c).idle_cpu()
            {
                return (Some(cpu), flags);
            }
        }
    }
    (None, flags)
}

fn find_matches_the_reference<P: nohz::Policy>(local_first: bool) {
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    let (mut picked, mut collected, mut rotated) = (0, 0, 0);
    for round in 0..300 {
        let w = random_state::<P>(&mut x);
        let kicker = round % 16;
        let rotate = (round / 16) % 64;
        let before: Vec<bool> = (0..w.m.nr_shards()).map(|s| w.m.shard_flagged(s)).collect();
        let (want, flags) = reference_find(&w, kicker, local_first, rotate);
        picked += usize::from(want.is_some());
        collected += usize::from(flags != before);
        rotated += usize::from(want != reference_find(&w, kicker, local_first, 0).0);
        let got = w.m.find_new_ilb_at(w.cpu(kicker), Jiffies::new(rotate));
        assert_eq!(got.map(CpuId::index), want, "round {round}: the pick");
        let after: Vec<bool> = (0..w.m.nr_shards()).map(|s| w.m.shard_flagged(s)).collect();
        assert_eq!(after, flags, "round {round}: the flags after the GC");
    }
    // Not vacuous: picks, GCs and (LocalFirst) picks that the rotation moved.
    assert!(
        picked > 100 && collected > 30,
        "{picked} picks, {collected} GCs"
    );
    assert_eq!(
        rotated > 30,
        local_first,
        "{rotated} picks moved by the rotation"
    );
}

/// `find_new_ilb` under `LocalFirst` (the shipped order) picks exactly what the spec's
/// description of it picks, and clears exactly the stale flags it met, over random maps
/// and states, every kicker and rotation.
#[test]
fn local_first_find_new_ilb_matches_its_description() {
    find_matches_the_reference::<Sharded<4, ByLlc>>(true);
}

/// The same for `LowestId`: flagged shards ascending, slots ascending.
#[test]
fn lowest_id_find_new_ilb_matches_its_description() {
    find_matches_the_reference::<Sharded<4, ByLlc, LowestId>>(false);
}

/// The kick's emptiness test with stale flags only (every shard's CPUs went idle and
/// busy again): `Hint` answers "someone" (the documented divergence), `Validated` reads
/// the words and answers "nobody"; once `find_new_ilb` met them (and GC'd them), both
/// answer "nobody". With one CPU registered, both answer "someone".
#[test]
fn hint_and_validated_answer_as_documented_on_stale_flags() {
    fn run<P: nohz::Policy>(stale_answer: bool) {
        let w = World::<P, 16, 1>::booted(16, Jiffies::new(0));
        w.m.set_shard_map(|c| c.index() / 4).unwrap();
        for c in [1, 5, 9, 13] {
            w.enter(c);
            w.busy(c, 1);
            w.m.nohz_balance_exit_idle(w.cpu(c), &*w.p);
        }
        assert!((0..4).all(|s| w.m.shard_flagged(s) && w.m.shard_word(s) == 0));
        assert_eq!(w.m.nohz_anyone_tickless(w.cpu(0)), stale_answer);
        assert_eq!(w.m.find_new_ilb(w.cpu(0)), None);
        assert!((0..4).all(|s| !w.m.shard_flagged(s)), "all GC'd");
        assert!(!w.m.nohz_anyone_tickless(w.cpu(0)));
        w.enter(10);
        assert!(w.m.nohz_anyone_tickless(w.cpu(0)));
        assert!(w.m.nohz_anyone_tickless(w.cpu(15)));
    }
    run::<Sharded<4, ByLlc, LocalFirst, Hint>>(true);
    run::<Sharded<4, ByLlc, LocalFirst, Validated>>(false);
}

/// A flat policy's shard reports say "no shards": no shard in use, no CPU placed, and shard 0
/// neither flagged nor holding a bit, with CPUs registered in the flat mask; the same shards
/// past those in use of a sharded machine.
#[test]
fn a_flat_machine_and_a_shard_past_the_last_report_nothing() {
    for_flat_policies();
    let w = World::<Sharded<4, Contiguous<2>>>::new(4);
    w.enter(1);
    assert_eq!(w.m.nr_shards(), 2);
    assert!(w.m.shard_flagged(0) && w.m.shard_word(0) != 0);
    assert!(!w.m.shard_flagged(2), "no shard 2");
    assert_eq!(w.m.shard_word(2), 0);
    assert_eq!(w.m.shard_members(2).count(), 0);
}

fn for_flat_policies() {
    fn check<P: nohz::Policy>() {
        let w = World::<P>::new(4);
        w.enter(1);
        w.enter(2);
        assert_eq!(w.mask(), [1, 2]);
        assert_eq!(w.m.nr_shards(), 0);
        assert_eq!(w.m.shard_slot(w.cpu(1)), None);
        assert!(!w.m.shard_flagged(0));
        assert_eq!(w.m.shard_word(0), 0);
        assert_eq!(w.m.shard_members(0).count(), 0);
    }
    check::<nohz::Patched>();
    check::<nohz::Legacy>();
    check::<nohz::Scalable>();
}

/// The idle set's debug form names it and shows its shard words.
#[test]
fn the_sharded_idle_set_shows_its_words_in_debug() {
    let w = World::<Sharded<4, Contiguous<2>>>::new(4);
    w.enter(3);
    let shown = format!("{:?}", w.m.nohz());
    assert!(shown.contains("ShardedIdle"), "{shown}");
    assert!(shown.contains("words"), "{shown}");
}
