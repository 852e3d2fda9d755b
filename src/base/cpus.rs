//! `Cpus`: what every room reads about the machine's CPUs: `nr_cpu_ids`, `cpu_active_mask`,
//! `cpu_online_mask` and the warning counters.
//!
//! C source: `kernel/cpu.c` (`cpu_active_mask`, `set_cpu_active`, `cpu_online_mask`, `set_cpu_online`), `include/linux/cpumask.h` (`nr_cpu_ids`, `cpu_active`).
//!
//! # Design
//!
//! The kernel keeps these as globals (`nr_cpu_ids`, `cpu_active_mask`) and prints its
//! `WARN_ON`s; here one value holds them, owned by the machine and lent to each room's paths
//! as a parameter, so no room imports the machine. `nr_cpu_ids` is written once at boot; the
//! active mask only by hotplug (`sched_cpu_deactivate` / `sched_cpu_activate`), on lines of
//! its own; the counters by whoever warns.

use crate::cpu::{CpuError, CpuId, NrCpuIds, NrCpuIdsCell};
use crate::cpumask::CpuMask;
use crate::warn::{WarnAt, WarnSink, Warning, Warnings};
use crossbeam_utils::CachePadded;

/// The machine's CPUs: `nr_cpu_ids`, `cpu_active_mask`, the warning counters.
#[derive(Debug)]
pub struct Cpus<const N: usize, const W: usize> {
    nr_cpu_ids: CachePadded<NrCpuIdsCell<N>>,
    active: CpuMask<W>,
    online: CpuMask<W>,
    warnings: Warnings<N>,
}

impl<const N: usize, const W: usize> Cpus<N, W> {
    crate::maybe_const_fn! {
        /// No CPU yet, none active, no warning.
        pub fn new() -> Self {
            Cpus {
                nr_cpu_ids: CachePadded::new(NrCpuIdsCell::new()),
                active: CpuMask::new(),
                online: CpuMask::new(),
                warnings: Warnings::new(),
            }
        }
    }

    /// `nr_cpu_ids` (zero before boot).
    #[inline(always)]
    pub fn nr_cpu_ids(&self) -> NrCpuIds<N> {
        self.nr_cpu_ids.get()
    }

    /// CPU `index`, if the machine has it.
    #[inline]
    pub fn cpu(&self, index: usize) -> Result<CpuId<N>, CpuError> {
        self.nr_cpu_ids().cpu(index)
    }

    /// Publishes `nr` as `nr_cpu_ids` if none is set yet (boot).
    pub(crate) fn claim(&self, nr: NrCpuIds<N>) -> Result<(), CpuError> {
        self.nr_cpu_ids.claim(nr)
    }

    /// Takes back a count [`claim`](Self::claim) published (a refused boot).
    pub(crate) fn withdraw(&self, nr: NrCpuIds<N>) {
        self.nr_cpu_ids.withdraw(nr);
    }

    /// `cpu_active(cpu)`.
    #[inline]
    pub fn cpu_active(&self, cpu: CpuId<N>) -> bool {
        self.active.test(cpu)
    }

    /// `cpu_active_mask`.
    #[inline]
    pub fn active_mask(&self) -> &CpuMask<W> {
        &self.active
    }

    /// `cpu_online(cpu)`: the CPU is up (it runs its idle loop or tasks, and takes
    /// interrupts). Every CPU is online from [`Machine::init`](crate::Machine::init);
    /// [`Machine::cpu_dying`](crate::Machine::cpu_dying) takes it offline and
    /// [`Machine::cpu_starting`](crate::Machine::cpu_starting) brings it back.
    #[inline]
    pub fn cpu_online(&self, cpu: CpuId<N>) -> bool {
        self.online.test(cpu)
    }

    /// `cpu_online_mask`.
    #[doc(alias = "cpu_online_mask")]
    #[inline]
    pub fn online_mask(&self) -> &CpuMask<W> {
        &self.online
    }

    /// `set_cpu_online(cpu, online)`: boot, `cpu_dying` and `cpu_starting` call it.
    #[inline]
    pub(crate) fn set_online(&self, cpu: CpuId<N>, online: bool) {
        if online {
            self.online.set(cpu);
        } else {
            self.online.clear(cpu);
        }
    }

    /// `set_cpu_active(cpu, active)`: only boot and hotplug call it.
    #[inline]
    #[doc(alias = "set_cpu_active")]
    pub(crate) fn set_active(&self, cpu: CpuId<N>, active: bool) {
        if active {
            self.active.set(cpu);
        } else {
            self.active.clear(cpu);
        }
    }

    /// The warning counters.
    #[inline]
    pub fn warnings(&self) -> &Warnings<N> {
        &self.warnings
    }

    /// Where a warning about `cpu` is counted.
    #[inline]
    pub(crate) fn warn_at(&self, cpu: CpuId<N>) -> WarnAt<'_, N> {
        self.warnings.at(cpu)
    }

    /// The kernel's "this runs on its own CPU" check: counts a [`Warning::WrongCpu`] against
    /// `cpu` when the caller is on another CPU (`this_cpu`, the platform's
    /// `smp_processor_id()`, when it can tell); the path then carries on, as the kernel does.
    #[inline(always)]
    pub(crate) fn check_on_cpu(&self, cpu: CpuId<N>, this_cpu: Option<CpuId<N>>) {
        self.warn_at(cpu)
            .warn_on(this_cpu.is_some_and(|me| me != cpu), Warning::WrongCpu);
    }
}

impl<const N: usize, const W: usize> Default for Cpus<N, W> {
    #[inline]
    fn default() -> Self {
        Self::new()
    }
}
