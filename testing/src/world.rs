//! The shared test rig: a [`Machine`] and its [`HostPlatform`], booted the way the tests
//! need, with the helpers every kernel-path test reaches for; and [`for_each_policy!`], which
//! runs one generic test body under every policy.
//!
//! # Design
//!
//! A [`World`] owns nothing but two `Arc`s: the machine and the platform. Tests on one
//! thread use them through the fields (`w.m.rq(..)`, `&*w.p`); a test that lets a platform hook
//! call back into the machine, or a loom model that hands both to spawned threads, clones the
//! `Arc`s it needs. Under `--cfg nohz_loom` the `Arc` is `loom::sync::Arc` (`std::sync::Arc`
//! otherwise), so a model's clones and drops are the ones loom has always explored (a clone is
//! a loom operation: a model that took one `Arc` more or fewer would explore other executions).
//!
//! The capacity (`N` CPUs, `W` mask words) is a parameter with a default, [`CPUS`] in one
//! word: the kernel tests use `World<P>`, the property tests and the loom models name theirs.
//! Nothing here is `const`: loom atomics cannot be built in `const` context, and tests build
//! their machines at run time anyway.
//!
//! Every helper panics on what a test would call a failed set-up (a CPU index out of range, a
//! boot or a rebuild the platform's topology refuses): the rig is test code, its panics are
//! test failures.

use super::{Event, HostPlatform};
use nohz::{CpuId, Jiffies, KickDecision, Machine, NrCpuIds, Policy, Rq, TickSched};

// The pointer a World shares its machine and platform through: loom's under loom, so that
// models clone and drop them as loom objects, exactly as they did with their own.
#[cfg(nohz_loom)]
use loom::sync::Arc;
#[cfg(not(nohz_loom))]
use std::sync::Arc;

/// The default capacity of a [`World`]: `NR_CPUS` of the kernel-path tests.
pub const CPUS: usize = 8;

/// Where [`World::new`] starts the jiffies clock: 20 ticks before the wrap, so that tests that
/// advance time cross it.
pub const START_JIFFIES: usize = usize::MAX - 20;

/// The scheduler's side of "`rq` now runs `n` tasks" (`n >= 1`): what the embedding kernel
/// keeps current on its own CPU (the current task is not the idle task, `nr_running` and
/// `h_nr_runnable` are `n`).
pub fn set_busy(rq: &Rq, n: u32) {
    rq.set_curr_is_idle(false);
    rq.set_nr_running(n);
    rq.set_h_nr_runnable(n);
}

/// The scheduler's side of "`rq` runs its idle task with nothing queued".
pub fn set_idle(rq: &Rq) {
    rq.set_curr_is_idle(true);
    rq.set_nr_running(0);
    rq.set_h_nr_runnable(0);
}

/// A machine of capacity `N` CPUs (`W` mask words, at least [`mask_words(N)`](nohz::mask_words):
/// the machine does not build with fewer; the default 1 covers up to 64 CPUs) under policy `P`,
/// and the recording host platform it runs on.
///
/// Constructors, from bare to fully booted:
///
/// - [`unbooted`](Self::unbooted): the platform of `nr` CPUs and a machine not yet `init`ed,
///   for tests of the boot itself or of a topology set before it;
/// - [`booted`](Self::booted): `init` from boot CPU 0 (CPU 0 the timekeeper, every CPU active,
///   housekeeping and idle, one LLC led by CPU 0), tick-sched's NO_HZ mode not yet active;
/// - [`new`](Self::new) (and [`new_at`](Self::new_at)): booted, with NO_HZ active on every
///   CPU and the clock at [`START_JIFFIES`]: the kernel-path tests' machine;
/// - [`with_llcs`](Self::with_llcs): the same, split into LLCs;
/// - [`shared`](Self::shared): every CPU of the capacity booted, the clock at 0, handed out as
///   the parts a loom model shares with its threads.
///
/// The helpers take CPU indices (`usize`) and panic on one out of range.
#[derive(Debug)]
pub struct World<P: Policy, const N: usize = CPUS, const W: usize = 1> {
    /// The machine.
    pub m: Arc<Machine<P, N, W>>,
    /// Its platform (`&*w.p` where the machine asks for one).
    pub p: Arc<HostPlatform<N>>,
}

impl<P: Policy, const N: usize, const W: usize> Clone for World<P, N, W> {
    /// Another handle on the same machine and platform (two `Arc` clones).
    fn clone(&self) -> Self {
        World {
            m: self.m.clone(),
            p: self.p.clone(),
        }
    }
}

impl<P: Policy, const N: usize, const W: usize> World<P, N, W> {
    /// A platform of `nr` CPUs whose jiffies clock starts at `start`, and a machine not yet
    /// booted (`nr_cpu_ids` 0 until [`Machine::init`]).
    ///
    /// # Panics
    ///
    /// If `nr` is 0 or above the capacity `N`.
    pub fn unbooted(nr: usize, start: Jiffies) -> Self {
        let ids = NrCpuIds::<N>::new(nr).expect("a world of 1..=N CPUs");
        World {
            p: Arc::new(HostPlatform::new(ids, start)),
            m: Arc::new(Machine::new()),
        }
    }

    /// [`unbooted`](Self::unbooted), then `init(nr, 0)`: CPU 0 boots and keeps time, every CPU
    /// is active, housekeeping and idle, in the platform's topology (one LLC led by CPU 0
    /// unless set otherwise). Tick-sched's NO_HZ mode is not active yet.
    ///
    /// # Panics
    ///
    /// As [`unbooted`](Self::unbooted), and if `init` refuses the platform's topology (a fresh
    /// platform's never is: it is one LLC led by CPU 0).
    pub fn booted(nr: usize, start: Jiffies) -> Self {
        let w = Self::unbooted(nr, start);
        w.m.init(nr, 0, &*w.p)
            .expect("the host platform's topology");
        w
    }

    /// [`booted`](Self::booted), then `tick_nohz_activate` (high-res) on every CPU: NO_HZ active
    /// everywhere, the clock at `start`.
    pub fn new_at(nr: usize, start: Jiffies) -> Self {
        let w = Self::booted(nr, start);
        for cpu in w.m.nr_cpu_ids().iter() {
            w.m.tick_nohz_activate(cpu, true);
        }
        w
    }

    /// `nr` CPUs in one LLC, all housekeeping, all idle, NO_HZ active everywhere, CPU 0 the
    /// timekeeper, jiffies at [`START_JIFFIES`].
    pub fn new(nr: usize) -> Self {
        Self::new_at(nr, Jiffies::new(START_JIFFIES))
    }

    /// [`new`](Self::new), with LLCs of `size` consecutive CPUs (rebuilt as
    /// [`rebuild`](Self::rebuild) does).
    pub fn with_llcs(nr: usize, size: usize) -> Self {
        let w = Self::new(nr);
        w.p.set_llc_size(size);
        w.rebuild();
        w
    }

    /// The loom models' set-up: all `N` CPUs [`booted`](Self::booted) with the clock at 0, as
    /// the parts a model shares with its threads and hooks (the machine, the platform) and the
    /// machine's `nr_cpu_ids`.
    pub fn shared() -> (Arc<Machine<P, N, W>>, Arc<HostPlatform<N>>, NrCpuIds<N>) {
        let World { m, p } = Self::booted(N, Jiffies::new(0));
        let nr = p.nr_cpu_ids();
        (m, p, nr)
    }

    /// CPU `i`, as the machine numbers it.
    pub fn cpu(&self, i: usize) -> CpuId<N> {
        self.m.cpu(i).expect("a CPU of this world")
    }

    /// CPU `i` runs `n` tasks (`n >= 1`): [`set_busy`] on its runqueue.
    pub fn busy(&self, i: usize, n: u32) {
        set_busy(self.m.rq(self.cpu(i)), n);
    }

    /// CPU `i` runs its idle task with nothing queued: [`set_idle`] on its runqueue.
    pub fn idle(&self, i: usize) {
        set_idle(self.m.rq(self.cpu(i)));
    }

    /// CPU `i` goes idle and stops its tick: [`idle`](Self::idle), then
    /// `nohz_balance_enter_idle`.
    pub fn enter(&self, i: usize) {
        self.idle(i);
        self.m.nohz_balance_enter_idle(self.cpu(i), &*self.p);
    }

    /// A scheduler tick on CPU `i` (`sched_tick`).
    pub fn tick(&self, i: usize) -> Option<KickDecision<N>> {
        self.m.sched_tick(self.cpu(i), &*self.p)
    }

    /// `rebuild_sched_domains` from the platform's current topology. Drops every event
    /// recorded so far.
    ///
    /// # Panics
    ///
    /// If the platform's topology is refused, or the rebuild recorded anything but its grace
    /// period.
    pub fn rebuild(&self) {
        self.p.take_events();
        self.m
            .rebuild_sched_domains(&*self.p)
            .expect("the platform's topology");
        assert_eq!(self.p.take_events(), [Event::SynchronizeRcu]);
    }

    /// CPU `i` goes inactive through the crate's hotplug path (`sched_cpu_deactivate`); the
    /// events it recorded (its grace period) are dropped.
    ///
    /// # Panics
    ///
    /// If the deactivation is refused.
    pub fn deactivate(&self, i: usize) {
        self.m
            .sched_cpu_deactivate(self.cpu(i), &*self.p)
            .expect("an active CPU");
        self.p.take_events();
    }

    /// Makes CPU `i` NO_HZ_FULL: in the nohz_full mask, out of housekeeping, vtime-accounted.
    pub fn nohz_full(&self, i: usize) {
        let cpu = self.cpu(i);
        self.m.nohz_full().set(cpu);
        self.m.housekeeping().clear(cpu);
        self.p.set_vtime_accounting(cpu, true);
    }

    /// CPU `i`'s tick-sched state (`tick_sched(i)`).
    pub fn ts(&self, i: usize) -> &TickSched {
        self.m.tick_sched(self.cpu(i))
    }

    /// The platform's jiffies.
    pub fn now(&self) -> Jiffies {
        self.p.clock().get()
    }

    /// Moves jiffies `ticks` on (the monotonic clock stays).
    pub fn advance(&self, ticks: usize) {
        self.p.clock().advance(ticks);
    }

    /// `nohz.idle_cpus_mask` (under `Sharded`, the registered CPUs of every shard), as CPU
    /// indices in order (shards and slots ascending under `Sharded`: ascending ids with
    /// contiguous shards).
    pub fn mask(&self) -> Vec<usize> {
        self.m.nohz_idle_cpus().map(|c| c.index()).collect()
    }

    /// The nohz IPIs sent so far, as `(from, to)` indices.
    pub fn ipis(&self) -> Vec<(usize, usize)> {
        self.p
            .ipis()
            .into_iter()
            .map(|(f, t)| (f.index(), t.index()))
            .collect()
    }

    /// Every platform event so far, in order.
    pub fn events(&self) -> Vec<Event<N>> {
        self.p.events()
    }

    /// The runqueues whose blocked load was decayed so far (`update_blocked_averages`), as CPU
    /// indices in order.
    pub fn decayed(&self) -> Vec<usize> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::BlockedAverages { cpu, .. } => Some(cpu.index()),
                _ => None,
            })
            .collect()
    }

    /// Warnings counted so far, on every CPU and outside them.
    pub fn warnings(&self) -> u64 {
        self.m.warnings().total(self.m.nr_cpu_ids())
    }

    /// The busy count of CPU `i`'s LLC.
    ///
    /// # Panics
    ///
    /// If CPU `i` is in no LLC.
    pub fn busy_count(&self, i: usize) -> i32 {
        self.m
            .llc_nr_busy_cpus(self.cpu(i))
            .expect("a CPU in an LLC")
    }
}

/// The `Sharded` configuration with the kernel's observables, which every per-policy test
/// runs (the strict differential of spec `sharded-idle.md` §2.9): contiguous shards of 2 CPUs
/// (up to 32 shards, so every world of up to 64 CPUs fits), `find_new_ilb` in ascending ids,
/// the `Validated` emptiness test.
pub type ShardedStrict = nohz::Sharded<
    32,
    nohz::sharded::Contiguous<2>,
    nohz::sharded::LowestId,
    nohz::sharded::Validated,
>;

/// [`ShardedStrict`] with the shipped `Hint` emptiness test: the configuration the
/// per-policy tests run with the one documented divergence allowed and counted.
pub type ShardedHint =
    nohz::Sharded<32, nohz::sharded::Contiguous<2>, nohz::sharded::LowestId, nohz::sharded::Hint>;

/// Expands generic test functions into one `#[test]` per policy: for each `name`, a
/// `patched::name`, a `legacy::name`, a `scalable::name`, a `sharded::name` and a
/// `sharded_hint::name` that call `name::<Patched>()`, `name::<Legacy>()`,
/// `name::<Scalable>()`, `name::<ShardedStrict>()` and `name::<ShardedHint>()`; with this
/// crate's feature `paced`, a `paced::name` (`Paced`); with its feature `posted`, a
/// `khan_next_balance::name`, a `khan_round_robin::name`, a `khan::name` and a
/// `hegde_hk::name` (`KhanNextBalance`, `KhanRoundRobin`, `Khan`, `HegdeHk`). The one place a
/// new policy joins every per-policy test.
///
/// `for_each_policy!(except Paced: name, ...)` leaves `Paced` out: for a kernel-path test
/// whose observable `Paced` changes by design (its documented divergence,
/// `src/beyond/paced.rs`). The file says why beside the list, and `tests/paced.rs` pins the
/// divergence down with a test of its own.
///
/// The functions live in the module where the macro is invoked (the generated modules call
/// them through `super::`), so a file invokes it once; a second set in the same file goes in a
/// module of its own, which imports its functions.
///
/// ```
/// use nohz::Policy;
/// use nohz_testing::World;
///
/// fn a_booted_world_has_no_idle_cpu_registered<P: Policy>() {
///     assert!(World::<P>::new(4).mask().is_empty());
/// }
///
/// // In a test crate: tests `patched::a_booted_world_...`, `legacy::...`, `scalable::...`.
/// // (It needs `nohz` as a dependency too: the expansion names its policies.)
/// nohz_testing::for_each_policy!(a_booted_world_has_no_idle_cpu_registered);
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! for_each_policy {
    (except Paced: $($name:ident),* $(,)?) => {
        $crate::__kernel_policies!($($name),*);
        $crate::__posted_policies!($($name),*);
    };
    ($($name:ident),* $(,)?) => {
        $crate::__kernel_policies!($($name),*);
        $crate::__paced_policy!($($name),*);
        $crate::__posted_policies!($($name),*);
    };
}

/// [`for_each_policy!`]'s modules for the policies that every build has: the kernel's and
/// `Scalable` and `Sharded` (this crate always turns on `nohz`'s `sharded`).
#[doc(hidden)]
#[macro_export]
macro_rules! __kernel_policies {
    ($($name:ident),*) => {
        mod patched {
            $(#[test] fn $name() { super::$name::<::nohz::Patched>() })*
        }
        mod legacy {
            $(#[test] fn $name() { super::$name::<::nohz::Legacy>() })*
        }
        mod scalable {
            $(#[test] fn $name() { super::$name::<::nohz::Scalable>() })*
        }
        mod sharded {
            $(#[test] fn $name() { super::$name::<$crate::ShardedStrict>() })*
        }
        mod sharded_hint {
            $(#[test] fn $name() { super::$name::<$crate::ShardedHint>() })*
        }
    };
}

// The feature-gated policies' modules: defined by this crate's features (a `cfg` in the
// expansion would be the invoking crate's).

/// `Paced`'s module of [`for_each_policy!`] (feature `paced`).
#[cfg(feature = "paced")]
#[doc(hidden)]
#[macro_export]
macro_rules! __paced_policy {
    ($($name:ident),*) => {
        mod paced {
            $(#[test] fn $name() { super::$name::<::nohz::Paced>() })*
        }
    };
}
/// Nothing: this build has no feature `paced`.
#[cfg(not(feature = "paced"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __paced_policy {
    ($($name:ident),*) => {};
}

/// The posted policies' modules of [`for_each_policy!`] (feature `posted`).
#[cfg(feature = "posted")]
#[doc(hidden)]
#[macro_export]
macro_rules! __posted_policies {
    ($($name:ident),*) => {
        mod khan_next_balance {
            $(#[test] fn $name() { super::$name::<::nohz::KhanNextBalance>() })*
        }
        mod khan_round_robin {
            $(#[test] fn $name() { super::$name::<::nohz::KhanRoundRobin>() })*
        }
        mod khan {
            $(#[test] fn $name() { super::$name::<::nohz::Khan>() })*
        }
        mod hegde_hk {
            $(#[test] fn $name() { super::$name::<::nohz::HegdeHk>() })*
        }
    };
}
/// Nothing: this build has no feature `posted`.
#[cfg(not(feature = "posted"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __posted_policies {
    ($($name:ident),*) => {};
}
