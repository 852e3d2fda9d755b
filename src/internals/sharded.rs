//! `Sharded`'s reports and test hooks on a machine (feature `testing` and `sharded`; hidden
//! from the docs). The reports answer for every policy (the kernel's flat mask has no shards),
//! through the idle set hook's report methods.

use crate::beyond::sharded::{Emptiness, IlbOrder, ShardLayout, ShardMapError, ShardSlot, Sharded};
use crate::cpu::CpuId;
use crate::fair::hooks::IdleCpus;
use crate::machine::Machine;
use crate::policy::Policy;

#[doc(hidden)]
impl<P: Policy, const N: usize, const W: usize> Machine<P, N, W> {
    /// `Sharded`: `cpu`'s shard and slot (`None` for a flat policy or before init).
    #[inline]
    pub fn shard_slot(&self, cpu: CpuId<N>) -> Option<ShardSlot> {
        let (set, _) = self.fair.nohz().idle_set();
        set.shard_of(self.fair.idle_at(cpu))
            .map(|(shard, slot)| ShardSlot { shard, slot })
    }

    /// `Sharded`: the shards in use (0 for a flat policy or before init).
    #[inline]
    pub fn nr_shards(&self) -> usize {
        let (set, line) = self.fair.nohz().idle_set();
        set.nr_shards(line)
    }

    /// `Sharded`: shard `s` is flagged in the summary (it may hold a registered CPU).
    #[inline]
    pub fn shard_flagged(&self, s: usize) -> bool {
        let (set, line) = self.fair.nohz().idle_set();
        set.shard_flagged(line, s)
    }

    /// `Sharded`: shard `s`'s idle word (bit `slot` set: that slot's CPU is registered).
    #[inline]
    pub fn shard_word(&self, s: usize) -> u64 {
        let (set, line) = self.fair.nohz().idle_set();
        set.shard_word(line, s)
    }

    /// `Sharded`: shard `s`'s members, slots ascending.
    pub fn shard_members(&self, s: usize) -> impl Iterator<Item = CpuId<N>> + '_ {
        let (set, line) = self.fair.nohz().idle_set();
        set.shard_members(line, self.nr_cpu_ids(), s)
    }

    /// `Sharded`: replaces the shard map built at init with an explicit one, `shard_of(cpu)`
    /// naming each CPU's shard (slots follow ascending ids within a shard; shard ids need not
    /// be dense). Refused, changing nothing, before init or for a flat policy, while any CPU
    /// is registered as idle (shards never change while a CPU is registered), for a shard id
    /// at or above the policy's `S`, or for a shard of more than 64 CPUs.
    ///
    /// Call it at boot, before the CPUs start idling, or with every CPU quiesced: nothing
    /// stops a CPU from registering while the map is rewritten.
    pub fn set_shard_map(&self, shard_of: impl Fn(CpuId<N>) -> usize) -> Result<(), ShardMapError> {
        let (set, line) = self.fair.nohz().idle_set();
        set.set_map(line, self.fair.slots(), self.nr_cpu_ids(), shard_of)
    }
}

/// Test hooks on a `Sharded` machine's shard words: the unit of the walk and the GC, without
/// the idle paths around them.
#[doc(hidden)]
impl<const S: usize, L, O, E, const N: usize, const W: usize> Machine<Sharded<S, L, O, E>, N, W>
where
    L: ShardLayout,
    O: IlbOrder,
    E: Emptiness,
{
    /// Sets (or clears) `at`'s bit in its shard word, nothing else.
    pub fn shard_set_bit(&self, at: ShardSlot, registered: bool) {
        let (set, line) = self.fair.nohz().idle_set();
        set.set_bit_alone(line, at, registered);
    }

    /// The ILB walk from after `from`, as CPU indices, each word read as it reaches it.
    pub fn shard_walk(&self, from: Option<ShardSlot>) -> impl Iterator<Item = usize> + '_ {
        let (set, line) = self.fair.nohz().idle_set();
        set.walk_from(line, from)
    }
}
