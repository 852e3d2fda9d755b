//! What only test rigs reach (feature `testing`; hidden from the docs). The test rig itself
//! (host platforms, the `World`) is the workspace crate `nohz-testing`; this folder holds what
//! cannot move out, because it reaches the crate's internal paths:
//!
//! - the lower-level paths behind the embedding entry points, each forwarding to the room that
//!   mirrors the kernel function and is documented there, once (a kernel calls [`Machine`]'s
//!   entry points instead);
//! - the planted bugs (`plant.rs`): internal steps replayed in orders the crate forbids;
//! - [`SITES`], every named ordering site, and what the rigs name of the policies beyond the
//!   kernel (their sites, `Sharded`'s code mutants, its reports: `sharded.rs`);
//! - in the counting build, the address of a variable a rig models in another layout.

mod plant;
#[cfg(feature = "sharded")]
mod sharded;

pub use plant::{
    clear_has_blocked_load_unconditionally, nohz_csd_ipi_without_release,
    sched_cpu_deactivate_old_order,
};

// What the loom models, the mutation table and the rigs name of the policies beyond the
// kernel: their ordering sites, `Sharded`'s code mutants and the place its reports name.
#[cfg(feature = "scalable")]
pub use crate::beyond::kick_deadline::{NOHZ_DEADLINE_BUMP, NOHZ_DEADLINE_REFRESH};
#[cfg(feature = "scalable")]
pub use crate::beyond::scalable::NOHZ_ENTER_IDLE_REPEAT_FENCE;
#[cfg(all(feature = "sharded", nohz_loom))]
pub use crate::beyond::sharded::with_code_mutant;
#[cfg(feature = "sharded")]
pub use crate::beyond::sharded::{CODE_MUTANTS, CodeMutant, NOHZ_SHARD_GC_FENCE, ShardSlot};

use crate::sync::{
    NOHZ_CSD_FETCH_ANDNOT, NOHZ_ENTER_IDLE_FENCE, NOHZ_ILB_FENCE, NOHZ_KICK_FETCH_OR,
    SCHED_DOMAINS_LOAD, SCHED_DOMAINS_PUBLISH, Site,
};

/// Every named ordering site of the crate: the kernel's (`nohz::sync`) and those of the
/// policies beyond the kernel that this build has, each declared beside its code. The
/// mutation runner of `loom-tests` walks this list; `tests/sites.rs` checks that every `Site`
/// declared under `src/` appears here exactly once.
///
/// The primitives (masks, keys, jiffies, counters) need no ordering beyond atomicity, so their
/// operations are all `Relaxed` and none is listed.
pub static SITES: &[&Site] = &[
    &NOHZ_ENTER_IDLE_FENCE,
    #[cfg(feature = "scalable")]
    &NOHZ_ENTER_IDLE_REPEAT_FENCE,
    #[cfg(feature = "scalable")]
    &NOHZ_DEADLINE_BUMP,
    #[cfg(feature = "scalable")]
    &NOHZ_DEADLINE_REFRESH,
    &NOHZ_ILB_FENCE,
    #[cfg(feature = "sharded")]
    &NOHZ_SHARD_GC_FENCE,
    &NOHZ_KICK_FETCH_OR,
    &NOHZ_CSD_FETCH_ANDNOT,
    &SCHED_DOMAINS_PUBLISH,
    &SCHED_DOMAINS_LOAD,
];

use crate::cpu::CpuId;
use crate::cpumask::CpuMask;
use crate::fair::rq::NohzFlags;
use crate::fair::{ExitFrom, IlbPass, KickDecision, KickOutcome, Nohz};
use crate::irqtime::IrqContext;
use crate::machine::Machine;
use crate::platform::{MaySleep, Platform, TickPlatform};
use crate::policy::Policy;

#[doc(hidden)]
impl<P: Policy, const N: usize, const W: usize> Machine<P, N, W> {
    /// The counting build only: the address of the plain `sched_clock_irqtime` flag of the
    /// kernels before seed 003 (`Legacy`, `Seed000`), which sits in the `nohz` line, for a rig
    /// that models a layout where it does not (`linecount::set_apart`).
    #[cfg(all(nohz_linecount, not(nohz_loom)))]
    pub fn legacy_irqtime_addr(&self) -> usize {
        crate::sync::linecount::addr_of(&self.fair.nohz().scalars.legacy_irqtime)
    }

    #[inline]
    pub fn set_cpu_online(&self, cpu: CpuId<N>, online: bool) {
        self.cpus.set_online(cpu, online);
    }

    #[doc(alias = "cpu_online_mask")]
    #[inline]
    pub fn online_mask(&self) -> &CpuMask<W> {
        self.cpus.online_mask()
    }

    #[inline]
    pub fn sched_softirq_pending(&self, cpu: CpuId<N>) -> bool {
        self.fair.rq(cpu).sched_softirq_pending()
    }

    #[doc(alias = "cpu_active_mask")]
    #[inline]
    pub fn active_mask(&self) -> &CpuMask<W> {
        self.cpus.active_mask()
    }

    #[inline(always)]
    pub fn nohz_balance_enter_idle<Pl: Platform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        self.fair.nohz_balance_enter_idle(&self.cpus, cpu, plat)
    }

    #[inline(always)]
    pub fn nohz_balance_exit_idle<Pl: Platform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        self.fair
            .nohz_balance_exit_idle(&self.cpus, cpu, ExitFrom::Tick, plat)
    }

    #[inline(always)]
    pub fn sched_balance_trigger<Pl: Platform<N>>(
        &self,
        cpu: CpuId<N>,
        plat: &Pl,
    ) -> Option<KickDecision<N>> {
        self.fair.sched_balance_trigger(&self.cpus, cpu, plat)
    }

    #[inline(always)]
    pub fn nohz_balancer_kick<Pl: Platform<N>>(&self, cpu: CpuId<N>, plat: &Pl) -> KickDecision<N> {
        self.fair.nohz_balancer_kick_gated(&self.cpus, cpu, plat)
    }

    /// The flags `nohz_balancer_kick` asks for once it wants balancing, given what its time
    /// checks left (the policy's `NohzLine::balance_kick`: STATS and BALANCE for the kernel's
    /// line; `Paced` leaves STATS out unless `flags` has it). For invariant checks that hold
    /// only where BALANCE always carries STATS.
    #[inline]
    pub fn nohz_balance_kick_flags(&self, flags: NohzFlags) -> NohzFlags {
        use crate::fair::hooks::NohzLine;
        self.fair.nohz().scalars.hook.balance_kick(flags)
    }

    #[inline(always)]
    pub fn kick_ilb<Pl: Platform<N>>(
        &self,
        cpu: CpuId<N>,
        flags: NohzFlags,
        plat: &Pl,
    ) -> KickOutcome<N> {
        self.fair.kick_ilb(&self.cpus, cpu, flags, plat)
    }

    #[inline(always)]
    pub fn find_new_ilb(&self, cpu: CpuId<N>) -> Option<CpuId<N>> {
        self.fair.find_new_ilb(&self.cpus, cpu)
    }

    #[doc(alias = "_nohz_idle_balance")]
    #[inline(always)]
    pub fn nohz_idle_balance_pass<Pl: Platform<N>>(
        &self,
        cpu: CpuId<N>,
        flags: NohzFlags,
        plat: &Pl,
    ) -> IlbPass {
        self.fair
            .nohz_idle_balance_pass(&self.cpus, cpu, flags, plat)
    }

    #[inline(always)]
    pub fn nohz_run_idle_balance<Pl: Platform<N>>(
        &self,
        cpu: CpuId<N>,
        plat: &Pl,
    ) -> Option<IlbPass> {
        self.fair.nohz_run_idle_balance(&self.cpus, cpu, plat)
    }

    #[inline(always)]
    pub fn nohz(&self) -> &Nohz<P, W> {
        self.fair.nohz()
    }

    pub fn nohz_idle_cpus(&self) -> impl Iterator<Item = CpuId<N>> + '_ {
        self.fair.nohz_idle_cpus(self.nr_cpu_ids())
    }

    #[inline(always)]
    #[doc(alias = "housekeeping_cpumask")]
    pub fn housekeeping(&self) -> &CpuMask<W> {
        self.fair.housekeeping()
    }

    #[inline(always)]
    pub fn llc_nr_busy_cpus(&self, cpu: CpuId<N>) -> Option<i32> {
        self.fair.llc_nr_busy_cpus(self.cpus.nr_cpu_ids(), cpu)
    }

    #[inline(always)]
    pub fn llc_leader(&self, cpu: CpuId<N>) -> Option<usize> {
        self.fair.llc_leader(cpu)
    }

    #[inline(always)]
    pub fn nohz_idle(&self, cpu: CpuId<N>) -> bool {
        self.fair.nohz_idle(cpu)
    }

    #[inline(always)]
    #[doc(alias = "sched_asym_cpucapacity")]
    pub fn sched_asym_cpucap_active(&self) -> bool {
        self.fair.sched_asym_cpucap_active()
    }

    #[inline(always)]
    pub fn tick_do_timer_cpu(&self) -> Option<CpuId<N>> {
        self.ticks.tick_do_timer_cpu(self.cpus.nr_cpu_ids())
    }

    #[inline(always)]
    pub fn set_tick_do_timer_cpu(&self, cpu: Option<CpuId<N>>) {
        self.ticks.set_tick_do_timer_cpu(cpu)
    }

    #[inline(always)]
    pub fn tick_nohz_cpu_hotpluggable(&self, cpu: CpuId<N>) -> bool {
        self.ticks.tick_nohz_cpu_hotpluggable(&self.cpus, cpu)
    }

    #[doc(alias = "tick_nohz_full_mask")]
    #[inline(always)]
    pub fn nohz_full(&self) -> &crate::CpuMask<W> {
        self.ticks.nohz_full()
    }

    #[inline(always)]
    pub fn tick_nohz_full_cpu(&self, cpu: CpuId<N>) -> bool {
        self.ticks.tick_nohz_full_cpu(cpu)
    }

    #[inline(always)]
    pub fn tick_nohz_activate(&self, cpu: CpuId<N>, highres: bool) {
        self.ticks.tick_nohz_activate(cpu, highres)
    }

    #[inline(always)]
    pub fn tick_nohz_tick_stopped(&self, cpu: CpuId<N>) -> bool {
        self.ticks.tick_nohz_tick_stopped(cpu)
    }

    #[inline(always)]
    pub fn tick_nohz_idle_enter<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        self.ticks.tick_nohz_idle_enter(&self.cpus, cpu, plat)
    }

    #[inline(always)]
    pub fn tick_nohz_irq_enter<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        self.ticks.tick_nohz_irq_enter(cpu, plat)
    }

    #[inline(always)]
    pub fn tick_nohz_irq_exit<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        self.ticks.tick_nohz_irq_exit(&self.cpus, cpu, plat)
    }

    #[inline(always)]
    pub fn tick_nohz_next_event<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) -> u64 {
        self.ticks.tick_nohz_next_event(&self.cpus, cpu, plat)
    }

    #[inline(always)]
    pub fn tick_nohz_stop_tick<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        self.ticks.tick_nohz_stop_tick(&self.cpus, cpu, plat)
    }

    #[inline(always)]
    #[doc(alias = "report_idle_softirq")]
    pub fn can_stop_idle_tick<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) -> bool {
        self.ticks
            .can_stop_idle_tick(&self.cpus, &self.fair, cpu, plat)
    }

    #[inline(always)]
    pub fn tick_nohz_idle_stop_tick<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        self.ticks
            .tick_nohz_idle_stop_tick(&self.cpus, &self.fair, cpu, plat)
    }

    #[inline(always)]
    pub fn tick_nohz_idle_retain_tick(&self, cpu: CpuId<N>) {
        self.ticks.tick_nohz_idle_retain_tick(cpu)
    }

    #[inline(always)]
    pub fn tick_nohz_idle_restart_tick<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        self.ticks.tick_nohz_idle_restart_tick(cpu, plat)
    }

    #[inline(always)]
    pub fn tick_nohz_idle_exit<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        self.ticks.tick_nohz_idle_exit(&self.cpus, cpu, plat)
    }

    #[inline(always)]
    pub fn tick_nohz_restart_sched_tick<Pl: TickPlatform<N>>(
        &self,
        cpu: CpuId<N>,
        now: u64,
        plat: &Pl,
    ) {
        self.ticks.tick_nohz_restart_sched_tick(cpu, now, plat)
    }

    #[inline(always)]
    pub fn can_stop_full_tick<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) -> bool {
        self.ticks.can_stop_full_tick(&self.cpus, cpu, plat)
    }

    #[inline(always)]
    pub fn tick_nohz_full_stop_tick<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        self.ticks.tick_nohz_full_stop_tick(&self.cpus, cpu, plat)
    }

    #[doc(alias = "__tick_nohz_full_update_tick")]
    #[inline(always)]
    pub fn tick_nohz_full_update_tick_at<Pl: TickPlatform<N>>(
        &self,
        cpu: CpuId<N>,
        now: u64,
        plat: &Pl,
    ) {
        self.ticks
            .tick_nohz_full_update_tick_at(&self.cpus, cpu, now, plat)
    }

    #[inline(always)]
    pub fn tick_nohz_full_update_tick<Pl: TickPlatform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        self.ticks.tick_nohz_full_update_tick(&self.cpus, cpu, plat)
    }

    #[doc(alias = "tick_nohz_handler")]
    #[doc(alias = "tick_sched_do_timer")]
    #[inline(always)]
    #[doc(alias = "tick_sched_handle")]
    pub fn tick_sched_timer<Pl: TickPlatform<N>>(
        &self,
        cpu: CpuId<N>,
        plat: &Pl,
    ) -> Option<crate::fair::KickDecision<N>> {
        self.ticks
            .tick_sched_timer(&self.cpus, &self.fair, cpu, plat)
    }

    #[inline(always)]
    pub fn sched_clock_irqtime(&self) -> &crate::StaticKey {
        self.irqtime.sched_clock_irqtime()
    }

    #[inline(always)]
    pub fn sched_clock_init_late(&self, clock_stable_early: bool, ctx: &impl MaySleep) {
        self.irqtime
            .sched_clock_init_late(&self.cpus, &self.fair, clock_stable_early, ctx)
    }

    #[doc(alias = "__sched_clock_work")]
    #[inline(always)]
    pub fn sched_clock_work(&self, ctx: &impl MaySleep) {
        self.irqtime.sched_clock_work(&self.cpus, &self.fair, ctx)
    }

    #[inline(always)]
    pub fn irqtime_account_irq(&self, cpu: CpuId<N>, ended: IrqContext, now: u64) {
        self.irqtime
            .irqtime_account_irq(&self.fair, cpu, ended, now)
    }

    #[inline(always)]
    pub fn sched_tick<Pl: Platform<N>>(&self, cpu: CpuId<N>, plat: &Pl) -> Option<KickDecision<N>> {
        crate::sched_core::sched_tick(&self.cpus, &self.fair, cpu, plat)
    }

    #[inline(always)]
    pub fn nohz_csd_ipi<Pl: Platform<N>>(&self, cpu: CpuId<N>, plat: &Pl) {
        crate::sched_core::nohz_csd_ipi(&self.cpus, &self.fair, cpu, plat)
    }

    #[inline]
    pub fn nohz_anyone_tickless(&self, cpu: CpuId<N>) -> bool {
        self.fair.anyone_tickless(&self.cpus, cpu)
    }

    /// `cpu` is registered as idle (in `nohz.idle_cpus_mask`, or under `Sharded` in its
    /// shard's word): `cpumask_test_cpu(cpu, nohz.idle_cpus_mask)` for every policy.
    #[doc(alias = "cpumask_test_cpu")]
    #[inline]
    pub fn nohz_idle_test(&self, cpu: CpuId<N>) -> bool {
        self.fair.nohz_idle_test(cpu)
    }

    #[inline(always)]
    pub fn find_new_ilb_at(&self, cpu: CpuId<N>, now: crate::jiffies::Jiffies) -> Option<CpuId<N>> {
        self.fair.find_new_ilb_at(&self.cpus, cpu, || now)
    }
}
