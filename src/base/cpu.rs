//! CPU identities and per-CPU storage.
//!
//! C source: `include/linux/cpumask.h` (`nr_cpu_ids`, `for_each_possible_cpu`), `include/linux/percpu-defs.h` (`DEFINE_PER_CPU`, `per_cpu`).
//!
//! # Design
//!
//! A kernel knows two CPU counts: `NR_CPUS`, the capacity it was built for, and `nr_cpu_ids`,
//! how many CPU ids this boot actually has. Stable Rust can size arrays only by the first, so
//! it is the const parameter `N` of [`CpuId<N>`], [`NrCpuIds<N>`] and [`PerCpu<T, N>`] (at most
//! [`MAX_CPUS`]); the second is a runtime value fixed at init, held in an [`NrCpuIds<N>`].
//!
//! # What a `CpuId` promises
//!
//! A [`CpuId<N>`] can only be made through [`CpuId::new`] / [`NrCpuIds::cpu`], which fail
//! unless the index is below the count they are given, or by the crate's own scans, which stop
//! at `nr_cpu_ids`. Outside the `testing` feature the only source of an [`NrCpuIds<N>`] is a
//! machine: [`Machine::init`](crate::Machine::init) returns its count and
//! [`Machine::nr_cpu_ids`](crate::Machine::nr_cpu_ids) reads it (the constructors
//! `NrCpuIds::new` and `NrCpuIds::full` exist only under `testing`, for host platforms and
//! primitives tested on their own; `tests/fixtures/forged_cpu_id` checks that a kernel cannot
//! call them). So:
//!
//! - every `CpuId<N>` is below `N`: indexing a `PerCpu<T, N>` with it never goes out of bounds,
//!   and no path of the crate has to decide what to do with an invalid CPU;
//! - in a kernel, which has one machine of capacity `N`, every `CpuId<N>` is below that
//!   machine's `nr_cpu_ids`.
//!
//! What remains is a program with several machines of one capacity (tests, the harness): an id
//! of the larger used with the smaller still indexes in bounds, and there it is neither online
//! nor active, so its paths do what they do for an inactive CPU (idle entry returns at once,
//! the balance trigger does nothing), its scans and the ILB choice never visit it, and a path
//! that must run on its own CPU counts [`Warning::WrongCpu`](crate::Warning) when the platform's
//! [`this_cpu`](crate::platform::CpuState::this_cpu) answers from its own machine.
//!
//! Each [`PerCpu`] slot is [`CachePadded`]: one CPU's hot fields never share a cache line (or
//! the adjacent-line prefetch pair) with another CPU's.

use crate::sync::{AtomicU32, Ordering::Relaxed};
use core::fmt;
use crossbeam_utils::CachePadded;

/// The largest capacity (`NR_CPUS`) the crate supports.
pub const MAX_CPUS: usize = 8192;

/// Compile-time check that a capacity is usable.
struct Capacity<const N: usize>;
impl<const N: usize> Capacity<N> {
    const OK: () = assert!(N >= 1 && N <= MAX_CPUS, "CPU capacity must be in 1..=8192");
}

/// Why a CPU id or CPU count was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuError {
    /// A CPU index at or above `nr_cpu_ids`.
    OutOfRange {
        /// The index asked for.
        index: usize,
        /// The machine's `nr_cpu_ids`.
        nr_cpu_ids: usize,
    },
    /// A CPU count above the compile-time capacity.
    TooManyCpus {
        /// The count asked for.
        requested: usize,
        /// The capacity `N`.
        capacity: usize,
    },
    /// `nr_cpu_ids` was already fixed to another value.
    AlreadyInitialised {
        /// The value it has.
        nr_cpu_ids: usize,
    },
}

impl fmt::Display for CpuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            CpuError::OutOfRange { index, nr_cpu_ids } => write!(
                f,
                "CPU {index} does not exist: this machine has CPU ids 0..{nr_cpu_ids}"
            ),
            CpuError::TooManyCpus {
                requested,
                capacity,
            } => write!(
                f,
                "{requested} CPUs requested, but the crate was built for at most {capacity}"
            ),
            CpuError::AlreadyInitialised { nr_cpu_ids } => {
                write!(f, "nr_cpu_ids is already fixed at {nr_cpu_ids}")
            }
        }
    }
}

impl core::error::Error for CpuError {}

/// The number of CPU ids this machine has (`nr_cpu_ids`), at most the capacity `N`.
///
/// Every scan of the crate (mask walks, per-CPU iteration) stops here. Zero is allowed and
/// means "no CPU yet": no id is valid and every scan is empty.
#[doc(alias = "nr_cpu_ids")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NrCpuIds<const N: usize>(u32);

impl<const N: usize> NrCpuIds<N> {
    /// `nr` CPU ids; fails if `nr > N`. The machine's boot ([`Machine::init`](crate::Machine::init))
    /// makes its count here.
    pub(crate) const fn checked(nr: usize) -> Result<Self, CpuError> {
        let () = Capacity::<N>::OK;
        if nr > N {
            return Err(CpuError::TooManyCpus {
                requested: nr,
                capacity: N,
            });
        }
        Ok(NrCpuIds(nr as u32))
    }

    /// `nr` CPU ids, not any machine's; fails if `nr > N`. Feature `testing` only: for the
    /// host platforms and for primitives (masks, per-CPU slots) tested on their own. A kernel
    /// takes its counts from its machine.
    #[cfg(feature = "testing")]
    pub const fn new(nr: usize) -> Result<Self, CpuError> {
        Self::checked(nr)
    }

    /// All `N` CPU ids of the capacity, not any machine's. Feature `testing` only, as
    /// [`new`](Self::new).
    #[cfg(feature = "testing")]
    pub const fn full() -> Self {
        let () = Capacity::<N>::OK;
        NrCpuIds(N as u32)
    }

    /// The count.
    #[inline(always)]
    pub const fn get(self) -> usize {
        self.0 as usize
    }

    /// The capacity `N` (`NR_CPUS`).
    pub const fn capacity(self) -> usize {
        N
    }

    /// CPU `index`, if it is below this count.
    #[inline]
    pub const fn cpu(self, index: usize) -> Result<CpuId<N>, CpuError> {
        if index < self.get() {
            Ok(CpuId(index as u32))
        } else {
            Err(CpuError::OutOfRange {
                index,
                nr_cpu_ids: self.get(),
            })
        }
    }

    /// Every CPU id, ascending (`for_each_possible_cpu`).
    #[doc(alias = "for_each_possible_cpu")]
    pub fn iter(self) -> impl DoubleEndedIterator<Item = CpuId<N>> + ExactSizeIterator + Clone {
        (0..self.0).map(CpuId)
    }
}

/// A CPU's id: below the capacity `N` and below the `nr_cpu_ids` it was checked against.
///
/// Made only through [`CpuId::new`] / [`NrCpuIds::cpu`], which fail unless the index is below
/// the count they are given, or by the crate's own scans, which stop at `nr_cpu_ids`. Outside
/// the `testing` feature the only source of an [`NrCpuIds<N>`] is a machine
/// ([`Machine::init`](crate::Machine::init) returns its count,
/// [`Machine::nr_cpu_ids`](crate::Machine::nr_cpu_ids) reads it), so:
///
/// - every `CpuId<N>` is below `N`: indexing a `PerCpu<T, N>` with it never goes out of
///   bounds;
/// - in a kernel, which has one machine of capacity `N`, every `CpuId<N>` is below that
///   machine's `nr_cpu_ids`.
///
/// With several machines of one capacity (tests, the harness), an id of the larger used with
/// the smaller still indexes in bounds; there it is neither online nor active, so its paths do
/// what they do for an inactive CPU (idle entry returns at once, the balance trigger does
/// nothing), the ILB choice never picks it, and a path that must run on its own CPU counts
/// [`Warning::WrongCpu`](crate::Warning) when the platform's
/// [`this_cpu`](crate::platform::CpuState::this_cpu) answers from its own machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CpuId<const N: usize>(u32);

impl<const N: usize> CpuId<N> {
    /// CPU `index`, if it is below `nr_cpu_ids` (never a panic).
    #[inline]
    pub const fn new(index: usize, nr_cpu_ids: NrCpuIds<N>) -> Result<Self, CpuError> {
        nr_cpu_ids.cpu(index)
    }

    /// Used only by the crate's scans, which stop below `nr_cpu_ids <= N`.
    #[inline(always)]
    pub(crate) const fn from_scan(index: usize) -> Self {
        debug_assert!(index < N);
        CpuId(index as u32)
    }

    /// The index, `0..nr_cpu_ids`.
    #[inline(always)]
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl<const N: usize> fmt::Display for CpuId<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CPU{}", self.0)
    }
}

/// `nr_cpu_ids` for a machine declared as a `static`: unset (zero) until boot code fixes it once.
///
/// Reads are `Relaxed`: the value is written once at boot, before the embedding kernel brings
/// up the other CPUs, and that bring-up already orders it for them.
#[derive(Debug)]
pub(crate) struct NrCpuIdsCell<const N: usize>(AtomicU32);

impl<const N: usize> NrCpuIdsCell<N> {
    crate::maybe_const_fn! {
        /// An unset cell (zero CPU ids).
        pub fn new() -> Self {
            let () = Capacity::<N>::OK;
            NrCpuIdsCell(AtomicU32::new(0))
        }
    }

    /// Publishes `nr` only if no count is set yet (the same value again is refused too, so
    /// exactly one caller claims the boot). For `Machine::init`, which checks the platform's
    /// topology with the count visible and then either keeps it or
    /// [`withdraw`](Self::withdraw)s it.
    pub(crate) fn claim(&self, nr: NrCpuIds<N>) -> Result<(), CpuError> {
        if nr.0 == 0 {
            return Err(CpuError::OutOfRange {
                index: 0,
                nr_cpu_ids: 0,
            });
        }
        self.0
            .compare_exchange(0, nr.0, Relaxed, Relaxed)
            .map(drop)
            .map_err(|have| CpuError::AlreadyInitialised {
                nr_cpu_ids: have as usize,
            })
    }

    /// Takes back a count that [`claim`](Self::claim) published: the cell reads zero again.
    /// Any other value is left alone.
    pub(crate) fn withdraw(&self, nr: NrCpuIds<N>) {
        let _ = self.0.compare_exchange(nr.0, 0, Relaxed, Relaxed);
    }

    /// The current count (zero before [`claim`](Self::claim)).
    #[inline(always)]
    pub fn get(&self) -> NrCpuIds<N> {
        // Only `init` stores, and it checked the value against `N`.
        NrCpuIds(self.0.load(Relaxed))
    }
}

impl<const N: usize> Default for NrCpuIdsCell<N> {
    fn default() -> Self {
        Self::new()
    }
}

/// One `T` per CPU, each in a [`CachePadded`] slot of its own (`DEFINE_PER_CPU`).
///
/// For a `static`, build it with [`per_cpu!`](crate::per_cpu) (or [`PerCpu::from_padded`] with
/// `[const { CachePadded::new(T::new()) }; N]` at the call site: stable Rust cannot call a
/// trait's `const fn` generically). At run time [`PerCpu::from_fn`] is simpler.
#[doc(alias = "DEFINE_PER_CPU")]
#[derive(Debug)]
pub struct PerCpu<T, const N: usize> {
    slots: [CachePadded<T>; N],
}

impl<T, const N: usize> PerCpu<T, N> {
    /// Wraps already padded slots; usable in `const` context.
    pub const fn from_padded(slots: [CachePadded<T>; N]) -> Self {
        let () = Capacity::<N>::OK;
        PerCpu { slots }
    }

    /// Builds each slot from its CPU index.
    pub fn from_fn(mut f: impl FnMut(usize) -> T) -> Self {
        let () = Capacity::<N>::OK;
        PerCpu {
            slots: core::array::from_fn(|i| CachePadded::new(f(i))),
        }
    }

    /// This CPU's slot (`per_cpu(var, cpu)`).
    #[doc(alias = "per_cpu")]
    #[inline(always)]
    pub fn get(&self, cpu: CpuId<N>) -> &T {
        // In bounds: a CpuId<N> is below N by construction.
        &self.slots[cpu.index()]
    }

    /// Each CPU below `nr_cpu_ids` with its slot, ascending.
    pub fn iter(&self, nr_cpu_ids: NrCpuIds<N>) -> impl Iterator<Item = (CpuId<N>, &T)> {
        nr_cpu_ids.iter().map(|cpu| (cpu, self.get(cpu)))
    }
}

impl<T, const N: usize> core::ops::Index<CpuId<N>> for PerCpu<T, N> {
    type Output = T;
    #[inline(always)]
    fn index(&self, cpu: CpuId<N>) -> &T {
        self.get(cpu)
    }
}

/// Builds a [`PerCpu`] in `const` context: `per_cpu![Rq::new(); 64]`, or `per_cpu![Rq::new()]`
/// where the type fixes the capacity.
///
/// The initialiser must be a constant expression; it is evaluated once per slot.
///
/// ```
/// use nohz::{per_cpu, PerCpu, StaticKey};
/// static KEYS: PerCpu<StaticKey, 8> = per_cpu![StaticKey::new_false()];
/// assert!(!KEYS.get(nohz::NrCpuIds::<8>::full().cpu(3).unwrap()).enabled());
/// ```
#[macro_export]
macro_rules! per_cpu {
    ($init:expr; $n:expr) => {
        $crate::PerCpu::from_padded([const { $crate::CachePadded::new($init) }; $n])
    };
    ($init:expr) => {
        $crate::PerCpu::from_padded([const { $crate::CachePadded::new($init) }; _])
    };
}

#[cfg(all(test, not(nohz_loom)))]
mod tests {
    use super::*;

    #[test]
    fn cpu_ids_are_checked_against_nr_cpu_ids() {
        let nr = NrCpuIds::<64>::new(4).unwrap();
        assert_eq!(CpuId::new(3, nr).unwrap().index(), 3);
        assert_eq!(
            CpuId::new(4, nr),
            Err(CpuError::OutOfRange {
                index: 4,
                nr_cpu_ids: 4
            })
        );
        assert!(CpuId::new(usize::MAX, nr).is_err());
        assert_eq!(
            NrCpuIds::<64>::new(65),
            Err(CpuError::TooManyCpus {
                requested: 65,
                capacity: 64
            })
        );
        let none = NrCpuIds::<64>::new(0).unwrap();
        assert!(none.cpu(0).is_err());
        assert_eq!(none.iter().count(), 0);
    }

    #[test]
    fn iteration_is_ascending_and_bounded() {
        let nr = NrCpuIds::<8>::new(5).unwrap();
        let ids: [usize; 5] = core::array::from_fn(|i| nr.iter().nth(i).unwrap().index());
        assert_eq!(ids, [0, 1, 2, 3, 4]);
        assert_eq!(nr.iter().len(), 5);
        assert_eq!(nr.iter().next_back().unwrap().index(), 4);
    }

    #[test]
    fn errors_explain_themselves() {
        extern crate std;
        use std::string::ToString;
        let e = CpuId::new(9, NrCpuIds::<16>::new(8).unwrap()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "CPU 9 does not exist: this machine has CPU ids 0..8"
        );
    }

    #[test]
    fn a_claim_is_exclusive_and_only_its_own_value_is_withdrawn() {
        let cell = NrCpuIdsCell::<16>::new();
        let (six, eight) = (
            NrCpuIds::<16>::new(6).unwrap(),
            NrCpuIds::<16>::new(8).unwrap(),
        );
        assert!(cell.claim(NrCpuIds::new(0).unwrap()).is_err());
        cell.claim(six).unwrap();
        assert_eq!(cell.get(), six);
        assert_eq!(
            cell.claim(six),
            Err(CpuError::AlreadyInitialised { nr_cpu_ids: 6 }),
            "not even the same value twice"
        );
        cell.withdraw(eight);
        assert_eq!(cell.get(), six, "another value is left alone");
        cell.withdraw(six);
        assert_eq!(cell.get().get(), 0);
        cell.claim(eight).unwrap();
        assert_eq!(cell.get(), eight);
    }

    static SLOTS: PerCpu<AtomicU32, 4> = per_cpu![AtomicU32::new(7)];
    static SLOTS_N: PerCpu<AtomicU32, 3> = per_cpu![AtomicU32::new(1); 3];

    #[test]
    fn per_cpu_slots_are_distinct_and_padded() {
        let nr = NrCpuIds::<4>::full();
        for (cpu, slot) in SLOTS.iter(nr) {
            slot.fetch_add(cpu.index() as u32, Relaxed);
        }
        let vals: [u32; 4] = core::array::from_fn(|i| SLOTS[nr.cpu(i).unwrap()].load(Relaxed));
        assert_eq!(vals, [7, 8, 9, 10]);
        let a = SLOTS.get(nr.cpu(0).unwrap()) as *const _ as usize;
        let b = SLOTS.get(nr.cpu(1).unwrap()) as *const _ as usize;
        let line = core::mem::align_of::<CachePadded<u8>>();
        assert_eq!(b - a, line);
        assert_eq!(a % line, 0);
        assert_eq!(SLOTS_N.iter(NrCpuIds::full()).count(), 3);
        let built = PerCpu::<u32, 6>::from_fn(|i| i as u32 * 10);
        let nr6 = NrCpuIds::<6>::new(2).unwrap();
        assert_eq!(built.iter(nr6).map(|(_, v)| *v).sum::<u32>(), 10);
    }
}
