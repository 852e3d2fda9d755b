//! What the kernel does not have: the policies beyond a mirror of the kernel, each with its
//! own code, its own state and its own ordering sites, entering the kernel paths only through
//! the policy hooks (`src/fair/hooks.rs`), which they implement from here. This room uses
//! `fair`; nothing in `fair` (or below it) names anything here, and a build without the
//! features below compiles none of it.
//!
//! C source: none: what the kernel does not have.
//!
//! - `scalable` (feature `scalable`): [`Scalable`](crate::Scalable) and its `nohz` line, the
//!   flags read before they are written, and (`kick_deadline`) the busy tick's "balancing not
//!   due" test as one load of a precomputed deadline word, kept true by the writers that make
//!   a kick due sooner.
//! - `sharded` (feature `sharded`): the `Sharded` policy's idle set: one word per shard of at
//!   most 64 CPUs and a sticky per-shard summary on the `nohz` line, so that idle entry and
//!   exit write only their own shard's line.
//! - `posted` (feature `posted`): the fixes posted to LKML in 2026 for the idle-balance storm
//!   of 768-CPU machines, each mirrored as a policy built on `Patched`: Imran Khan's two
//!   patches (`nohz.next_balance` scaled by the idle count; `find_new_ilb` round robin from
//!   a new `nohz.ilb_cpu_last`), alone and together, and Shrikanth Hegde's early
//!   housekeeping test of the kick.
//! - `paced` (feature `paced`): [`Paced`](crate::Paced), `Patched` with the ILB's blocked-load
//!   refresh paced by `nohz.next_blocked`, no NEXT-only kick a jiffy before a BALANCE kick,
//!   and `find_new_ilb`'s scan started from a hash of `jiffies`: no new shared state.

#[cfg(any(feature = "posted", feature = "paced"))]
/// The idle-set methods that the idle sets built on the kernel's flat mask share, `self.0`
/// being that mask (`posted`'s and `paced`'s): the kernel's own implementation runs them.
/// Defined before the modules that use it, so that they see it.
macro_rules! flat_mask_methods {
    ($line:ty) => {
        type Cpu = ();
        type Placed = ();

        #[inline(always)]
        fn set_cpu<const N: usize>(&self, _line: &$line, at: &(), cpu: CpuId<N>) {
            self.0.set_cpu(&(), at, cpu)
        }

        #[inline(always)]
        fn after_fence(&self, _line: &$line, _at: &(), _placed: ()) {}

        #[inline(always)]
        fn clear_cpu<const N: usize>(&self, at: &(), cpu: CpuId<N>) {
            self.0.clear_cpu(at, cpu)
        }

        #[inline(always)]
        fn test_cpu<const N: usize>(&self, at: &(), cpu: CpuId<N>) -> bool {
            self.0.test_cpu(at, cpu)
        }

        #[inline(always)]
        fn empty<const N: usize>(&self, _line: &$line, at: &(), cpus: &Cpus<N, W>) -> bool {
            self.0.empty(&(), at, cpus)
        }

        #[inline(always)]
        fn for_each_cpu_wrap<'a, const N: usize>(
            &'a self,
            _line: &'a $line,
            at: &(),
            this_cpu: CpuId<N>,
            nr: NrCpuIds<N>,
        ) -> impl Iterator<Item = CpuId<N>> + 'a {
            self.0.for_each_cpu_wrap(&(), at, this_cpu, nr)
        }

        #[inline(always)]
        fn for_each_cpu<'a, const N: usize>(
            &'a self,
            _line: &'a $line,
            nr: NrCpuIds<N>,
        ) -> impl Iterator<Item = CpuId<N>> + 'a {
            self.0.iter(nr)
        }

        #[inline(always)]
        fn registered<'a, const N: usize>(
            &'a self,
            _line: &'a $line,
            nr: NrCpuIds<N>,
        ) -> impl Iterator<Item = CpuId<N>> + 'a {
            self.0.iter(nr)
        }
    };
}

#[cfg(feature = "scalable")]
pub(crate) mod kick_deadline;
#[cfg(feature = "paced")]
pub(crate) mod paced;
#[cfg(feature = "posted")]
pub(crate) mod posted;
#[cfg(feature = "scalable")]
pub(crate) mod scalable;
#[cfg(feature = "sharded")]
pub(crate) mod sharded;
