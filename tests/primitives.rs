//! Property tests of the primitives against plain sequential models (a `BTreeSet` for the mask,
//! 128-bit integers for jiffies, an `i64` and the kernel's warning rules for static keys).

use nohz::{CpuMask, Jiffies, NrCpuIds, StaticKey, StaticKeyError, Warning, Warnings};
use nohz::{MAX_JIFFY_OFFSET, msecs_to_jiffies};
use proptest::prelude::*;
use std::collections::BTreeSet;
use std::num::NonZeroU32;

const N: usize = 8192;
const W: usize = N / 64;

#[derive(Debug, Clone)]
enum MaskOp {
    Set(usize),
    Clear(usize),
}

fn mask_case() -> impl Strategy<Value = (usize, Vec<MaskOp>, usize)> {
    // Live CPU counts cluster at word and line boundaries, where scans go wrong.
    let nr = prop_oneof![
        Just(1usize),
        Just(63),
        Just(64),
        Just(65),
        Just(511),
        Just(512),
        Just(513),
        Just(4096),
        Just(8192),
        1usize..=N,
    ];
    nr.prop_flat_map(|nr| {
        let cpu = prop_oneof![0..nr, Just(nr - 1), Just(0), (0..nr).prop_map(|c| c & !63)];
        let op = prop_oneof![
            cpu.clone().prop_map(MaskOp::Set),
            cpu.prop_map(MaskOp::Clear)
        ];
        (Just(nr), prop::collection::vec(op, 0..40), 0..=nr)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Every query agrees with a `BTreeSet` after any sequence of sets and clears.
    #[test]
    fn cpumask_matches_a_set((nr, ops, start) in mask_case()) {
        let mask = CpuMask::<W>::new();
        let nrc = NrCpuIds::<N>::new(nr).unwrap();
        let mut model = BTreeSet::new();
        for op in ops {
            match op {
                MaskOp::Set(c) => { mask.set(nrc.cpu(c).unwrap()); model.insert(c); }
                MaskOp::Clear(c) => { mask.clear(nrc.cpu(c).unwrap()); model.remove(&c); }
            }
        }
        let ids = |it: &mut dyn Iterator<Item = nohz::CpuId<N>>| it.map(|c| c.index()).collect::<Vec<_>>();
        prop_assert_eq!(mask.is_empty(nrc), model.is_empty());
        prop_assert_eq!(mask.weight(nrc), model.len());
        prop_assert_eq!(mask.first(nrc).map(|c| c.index()), model.first().copied());
        prop_assert_eq!(ids(&mut mask.iter(nrc)), model.iter().copied().collect::<Vec<_>>());
        for c in [0, nr / 2, nr - 1] {
            prop_assert_eq!(mask.test(nrc.cpu(c).unwrap()), model.contains(&c));
        }
        let wrapped: Vec<usize> = model.range(start..).chain(model.range(..start)).copied().collect();
        prop_assert_eq!(ids(&mut mask.iter_wrap(start, nrc).unwrap()), wrapped);
        // iter_and with a mask holding every third CPU.
        let other = CpuMask::<W>::new();
        for c in (0..nr).step_by(3) { other.set(nrc.cpu(c).unwrap()); }
        let both: Vec<usize> = model.iter().copied().filter(|c| c % 3 == 0).collect();
        prop_assert_eq!(ids(&mut mask.iter_and(&other, nrc)), both);
    }

    /// The wrap-safe comparisons agree with exact arithmetic whenever the true distance is
    /// below half the word range, including across the wrap.
    #[test]
    fn jiffies_compare_like_exact_time(base in any::<usize>(), d in -(isize::MAX as i128)..=(isize::MAX as i128)) {
        let a = Jiffies::new(base);
        let b = if d >= 0 { a.add(d as usize) } else { a.sub((-d) as usize) };
        // b is d ticks after a in true time.
        prop_assert_eq!(b.is_after(a), d > 0);
        prop_assert_eq!(b.is_before(a), d < 0);
        prop_assert_eq!(b.is_after_eq(a), d >= 0);
        prop_assert_eq!(b.is_before_eq(a), d <= 0);
        prop_assert_eq!(a.is_after(b), d < 0);
        if d >= 0 { prop_assert_eq!(b.since(a) as i128, d); }
    }

    /// `msecs_to_jiffies` is the exact ceiling of `ms * HZ / 1000`, saturating like the kernel.
    #[test]
    fn msecs_to_jiffies_is_the_ceiling(ms in any::<u32>(), hz in prop_oneof![Just(100u32), Just(250), Just(300), Just(1000), 1u32..=10_000]) {
        let got = msecs_to_jiffies(ms, NonZeroU32::new(hz).unwrap());
        if ms > i32::MAX as u32 {
            prop_assert_eq!(got, MAX_JIFFY_OFFSET);
        } else {
            let exact = (ms as u128 * hz as u128).div_ceil(1000);
            prop_assert_eq!(got as u128, exact.min(MAX_JIFFY_OFFSET as u128));
            prop_assert!(ms == 0 || got >= 1, "a non-zero time never rounds to zero ticks");
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum KeyOp {
    Enable,
    Disable,
    Inc,
    Dec,
}

proptest! {
    /// Any sequence of the four operations, on either kind of key, moves the count and warns
    /// exactly as the kernel's rules (spec §8.1) say.
    #[test]
    fn static_key_follows_the_kernel_rules(
        start_true in any::<bool>(),
        ops in prop::collection::vec(prop_oneof![Just(KeyOp::Enable), Just(KeyOp::Disable), Just(KeyOp::Inc), Just(KeyOp::Dec)], 0..60),
    ) {
        let key = if start_true { StaticKey::new_true() } else { StaticKey::new_false() };
        let warnings = Warnings::<1>::new();
        let sink = warnings.cpu_less();
        let mut count: i64 = start_true as i64;
        let mut warned = [0u64; 4];
        for op in ops {
            match op {
                KeyOp::Enable => {
                    let flipped = key.enable(&sink);
                    prop_assert_eq!(flipped, count == 0);
                    if count > 1 { warned[0] += 1; }
                    if count == 0 { count = 1; }
                }
                KeyOp::Disable => {
                    let flipped = key.disable(&sink);
                    prop_assert_eq!(flipped, count == 1);
                    if count > 1 { warned[1] += 1; }
                    if count == 1 { count = 0; }
                }
                KeyOp::Inc => { prop_assert_eq!(key.inc(&sink), Ok(())); count += 1; }
                KeyOp::Dec => {
                    if count == 0 {
                        prop_assert_eq!(key.dec(&sink), Err(StaticKeyError::Underflow));
                        warned[3] += 1;
                    } else {
                        prop_assert_eq!(key.dec(&sink), Ok(()));
                        count -= 1;
                    }
                }
            }
            prop_assert_eq!(key.count() as i64, count);
            prop_assert_eq!(key.enabled(), count > 0);
            prop_assert_eq!(key.likely(), count > 0);
            prop_assert_eq!(key.unlikely(), count > 0);
        }
        prop_assert_eq!(warnings.of_kind(Warning::StaticKeyEnableCount), warned[0]);
        prop_assert_eq!(warnings.of_kind(Warning::StaticKeyDisableCount), warned[1]);
        prop_assert_eq!(warnings.of_kind(Warning::StaticKeyIncOverflow), warned[2]);
        prop_assert_eq!(warnings.of_kind(Warning::StaticKeyDecUnderflow), warned[3]);
        prop_assert_eq!(warnings.outside_cpus(), warned.iter().sum::<u64>());
    }
}

/// `TICK_NSEC` rounds to the nearest nanosecond: 1 ms at 1000 Hz, 4 ms at 250, 3,333,333 ns at
/// 300, 10 ms at 100, and a 1 Hz tick is a second.
#[test]
fn tick_nsec_is_the_period_rounded_to_the_nearest_ns() {
    use nohz::platform::tick_nsec;
    assert_eq!(tick_nsec(1000), 1_000_000);
    assert_eq!(tick_nsec(250), 4_000_000);
    assert_eq!(tick_nsec(300), 3_333_333);
    assert_eq!(tick_nsec(100), 10_000_000);
    assert_eq!(tick_nsec(1), 1_000_000_000);
    assert_eq!(tick_nsec(3), 333_333_333);
    assert_eq!(tick_nsec(7), 142_857_143, "rounds up past the half");
}

/// The softirq bits are the kernel's softirq numbers (`1 << TIMER_SOFTIRQ` ...), and the
/// hotplug-safe mask is `TIMER | IRQ_POLL | HRTIMER | RCU`.
#[test]
fn softirq_bits_are_the_kernels_numbers() {
    use nohz::platform::softirq;
    assert_eq!(softirq::TIMER, 1 << 1);
    assert_eq!(softirq::IRQ_POLL, 1 << 5);
    assert_eq!(softirq::SCHED, 1 << 7);
    assert_eq!(softirq::HRTIMER, 1 << 8);
    assert_eq!(softirq::RCU, 1 << 9);
    assert_eq!(softirq::HOTPLUG_SAFE_MASK, 0b11_0010_0010);
}

/// The refusals explain themselves.
#[test]
fn init_and_topology_errors_say_what_was_refused() {
    use nohz::{CpuError, InitError, TopologyError};
    let topo = TopologyError::BadLlcLeader { cpu: 3, leader: 5 };
    assert_eq!(
        topo.to_string(),
        "CPU 3 names CPU 5 as the lowest CPU of its LLC, but CPU 5 is above it or names another CPU"
    );
    assert_eq!(
        InitError::Topology(topo).to_string(),
        format!("bad topology: {topo}")
    );
    let cpus = CpuError::AlreadyInitialised { nr_cpu_ids: 4 };
    assert_eq!(
        InitError::Cpus(cpus).to_string(),
        format!("bad CPU count: {cpus}")
    );
    assert!(!cpus.to_string().is_empty());
}

/// `tick_nohz_full_setup`'s refusals say what was wrong, in words a boot log can print.
#[test]
fn nohz_full_errors_say_what_was_refused() {
    use nohz::{CpuError, NohzFullError};
    assert_eq!(
        NohzFullError::NotBooted.to_string(),
        "the machine has not booted: call init first"
    );
    let bad = CpuError::OutOfRange {
        index: 9,
        nr_cpu_ids: 4,
    };
    assert_eq!(
        NohzFullError::NoSuchCpu(bad).to_string(),
        format!("nohz_full: {bad}")
    );
    assert_eq!(
        NohzFullError::Timekeeper { cpu: 0 }.to_string(),
        "CPU 0 keeps time and must stay a housekeeping CPU, not NO_HZ_FULL"
    );
    assert_eq!(
        NohzFullError::NoHousekeeping.to_string(),
        "nohz_full would leave no housekeeping CPU"
    );
}

/// `cpumask_empty` and `cpumask_first` with two CPUs at the same bit of two words: the bits
/// must add up, never cancel. Every pair of words of a line, at bits 0, 17 and 63, in a mask of
/// whole lines (1024 CPUs) and in the line `nr_cpu_ids` ends inside (1000 CPUs: the reduction
/// of its whole words).
#[test]
fn two_cpus_at_one_bit_of_two_words_never_cancel() {
    for nr in [1024usize, 1000] {
        let ids = NrCpuIds::<1024>::new(nr).unwrap();
        for line in 0..2 {
            for a in 0..8 {
                for b in (a + 1)..8 {
                    for bit in [0, 17, 63] {
                        let mask = CpuMask::<16>::new();
                        let (x, y) = (line * 512 + a * 64 + bit, line * 512 + b * 64 + bit);
                        if y >= nr {
                            continue;
                        }
                        mask.set(ids.cpu(x).unwrap());
                        mask.set(ids.cpu(y).unwrap());
                        assert!(!mask.is_empty(ids), "nr {nr}: CPUs {x} and {y}");
                        assert_eq!(mask.first(ids).map(|c| c.index()), Some(x));
                        assert_eq!(mask.weight(ids), 2);
                    }
                }
            }
        }
    }
}

/// A mask holds 64 CPUs per word; a CPU set names its capacity and prints as the kernel's logs
/// name CPUs.
#[test]
fn capacities_and_names() {
    assert_eq!(CpuMask::<1>::CAPACITY, 64);
    assert_eq!(CpuMask::<2>::CAPACITY, 128);
    assert_eq!(CpuMask::<16>::CAPACITY, 1024);
    let ids = NrCpuIds::<256>::new(3).unwrap();
    assert_eq!(ids.capacity(), 256);
    assert_eq!(ids.get(), 3);
    assert_eq!(ids.cpu(2).unwrap().to_string(), "CPU2");
}

/// `MAX_JIFFY_OFFSET` is the kernel's `((LONG_MAX >> 1) - 1)`: on a 64-bit target
/// 0x3fff_ffff_ffff_fffe. A jiffies value debug-prints in hex, and the static key's refusals
/// say what was refused.
#[test]
fn jiffy_limits_and_messages() {
    #[cfg(target_pointer_width = "64")]
    assert_eq!(MAX_JIFFY_OFFSET, 0x3fff_ffff_ffff_fffe);
    assert_eq!(MAX_JIFFY_OFFSET, (isize::MAX as usize >> 1) - 1);
    assert_eq!(format!("{:?}", Jiffies::new(255)), "Jiffies(0xff)");
    assert_eq!(
        StaticKeyError::Overflow.to_string(),
        "static key count would overflow"
    );
    assert_eq!(
        StaticKeyError::Underflow.to_string(),
        "static key decremented below zero"
    );
}

/// Hotplug's refusals say which CPU and why.
#[test]
fn hotplug_refusals_say_which_cpu_and_why() {
    use nohz::HotplugError;
    assert_eq!(
        HotplugError::NotActive { cpu: 2 }.to_string(),
        "CPU 2 is not active: nothing to deactivate"
    );
    assert_eq!(
        HotplugError::AlreadyActive { cpu: 1 }.to_string(),
        "CPU 1 is already active"
    );
    assert_eq!(
        HotplugError::LastActiveCpu { cpu: 0 }.to_string(),
        "CPU 0 is the last active CPU"
    );
    for e in [
        HotplugError::StillActive { cpu: 3 },
        HotplugError::NohzFullTimekeeper { cpu: 3 },
    ] {
        assert!(e.to_string().starts_with("CPU 3 "), "{e}");
    }
}
